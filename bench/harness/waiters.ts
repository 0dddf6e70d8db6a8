// Sync waiters: many GET …/sync requests held open by one process, then released at once.
import { Agent } from 'node:http';
import { Contender } from './contender.js';
import { callAll, holdRequests, parseJson, type Answer } from './http.js';
import { quantile } from './load.js';
import { type MemoryReport, now, type TriggerRef } from '../shared.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `probe` every `everyMs` until it holds; throws after `timeoutMs`. */
export async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 120_000, everyMs = 20): Promise<number> {
  const start = now();
  while (!(await probe())) {
    if (now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs / 1000} s waiting until ${what}`);
    await sleep(everyMs);
  }
  return now() - start;
}

export interface WaitRound {
  waiters: number;
  /** ms from release (all runs' main() allowed to return at once) to the last answer. */
  releaseToLast: number;
  /** ms from release to each answer. */
  releaseToAnswer: { p50: number; p99: number };
  /** RSS per held request: (RSS holding them − RSS before opening them) / waiters, after full GCs. */
  rssPerWaiterBytes?: number;
  rssBefore?: number;
  rssHolding?: number;
  /** Ours only: ms from the module reporting the run finished (its `succeeded` event) to the answer. */
  completionToAnswer?: { p50: number; p99: number; max: number };
  /** Ours only: ms from the bot's main() returning to the answer. */
  returnToAnswer?: { p50: number; p99: number };
  /** Ours only: ms from release to the last run stored as finished. */
  releaseToLastStored?: number;
  /** Ours only: ms from the last run stored as finished to the last answer. */
  lastStoredToLast?: number;
  /** Ours only: SQL statements executed in the process while all waiters were held, over `heldMs`. */
  statementsWhileHeld?: number;
  heldMs?: number;
  /** Ours only: how long triggering the runs took (set-up, not a figure). */
  triggerSetupMs?: number;
}

function stats(values: number[]): { p50: number; p99: number; max: number } {
  return { p50: quantile(values, 0.5), p99: quantile(values, 0.99), max: Math.max(...values) };
}

function checkAnswers(answers: Answer[], expectOutputs: boolean): void {
  const bad = answers.filter((a) => {
    if (a.status !== 200) return true;
    const body = parseJson(a);
    return body?.success !== true || (expectOutputs && body.outputs?.[0]?.title !== 'released');
  });
  if (bad.length)
    throw new Error(
      `${bad.length} of ${answers.length} waiters got a wrong answer, e.g. HTTP ${bad[0].status}: ${bad[0].text.slice(0, 200)}`,
    );
}

/** The raw long-poll baseline: hold `n` requests, release them all. */
export async function rawRound(c: Contender, offset: number, n: number, round: string, measureMemory: boolean): Promise<WaitRound> {
  const before = measureMemory ? await c.call<MemoryReport>('memory') : undefined;
  const held = holdRequests(Array.from({ length: n }, (_, i) => ({ url: `http://127.0.0.1:${c.port}/wait/${round}-${i}` })));
  await held.connected;
  await until(`the long-poll server holds ${n} requests`, async () => (await c.call<number>('held')) >= n);
  const holding = measureMemory ? await c.call<MemoryReport>('memory') : undefined;
  const releasedAt = (await c.call<number>('releaseAll')) - offset;
  const answers = await held.answers;
  checkAnswers(answers, false);
  const delays = answers.map((a) => a.at - releasedAt);
  return {
    waiters: n,
    releaseToLast: Math.max(...delays),
    releaseToAnswer: stats(delays),
    ...(before && holding ? { rssBefore: before.rss, rssHolding: holding.rss, rssPerWaiterBytes: (holding.rss - before.rss) / n } : {}),
  };
}

export interface OurRoundOptions {
  n: number;
  /** 'all': every run returns at once; a number: one run every that many ms. */
  release: 'all' | number;
  measureMemory: boolean;
  /** How long to hold all waiters while counting SQL statements. */
  holdMs: number;
}

/**
 * Our sync endpoint: trigger `n` runs of the `release` bot (they all start and block), open one sync
 * request per run, wait until all have arrived and the process is quiet, count statements over
 * `holdMs`, release the runs, and time every answer against its run's completion.
 */
export async function ourRound(c: Contender, offset: number, trigger: TriggerRef, o: OurRoundOptions): Promise<WaitRound> {
  const base = `http://127.0.0.1:${c.port}/webhooks/${trigger.id}/trigger`;
  const headers = { 'content-type': 'application/json', 'x-key': trigger.key };

  const setupStart = now();
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const started = await callAll(
    agent,
    Array.from({ length: o.n }, () => ({ method: 'POST' as const, url: base, headers, body: '{}' })),
    32,
  );
  agent.destroy();
  const refused = started.find((a) => a.status !== 200);
  if (refused) throw new Error(`triggering a run answered HTTP ${refused.status}: ${refused.text.slice(0, 200)}`);
  const ids = started.map((a) => {
    const id = parseJson(a)?.invocation?.id;
    if (typeof id !== 'string') throw new Error(`triggering a run answered without an invocation id: ${a.text.slice(0, 200)}`);
    return id;
  });
  await until(`${o.n} runs are inside main()`, async () => (await c.call<{ holding: number }>('gate')).holding >= o.n);
  const triggerSetupMs = now() - setupStart;

  if (o.measureMemory) await sleep(200);
  const before = o.measureMemory ? await c.call<MemoryReport>('memory') : undefined;
  const seen0 = await c.call<number>('syncSeen');
  const held = holdRequests(ids.map((id) => ({ url: `${base}/invocation/${id}/sync`, headers: { 'x-key': trigger.key } })));
  await held.connected;
  await until(`${o.n} sync requests have arrived`, async () => (await c.call<number>('syncSeen')) - seen0 >= o.n);
  // Each waiter reads its run once when it arrives; wait for those reads to finish.
  let last = -1;
  let stableFor = 0;
  await until(
    'the process stops executing statements after the sync requests arrived',
    async () => {
      const count = await c.call<number>('statements');
      stableFor = count === last ? stableFor + 1 : 0;
      last = count;
      return stableFor >= 3;
    },
    15_000,
    100,
  );

  const q0 = await c.call<number>('statements');
  const heldFrom = now();
  const holding = o.measureMemory ? await c.call<MemoryReport>('memory') : undefined;
  await sleep(Math.max(0, o.holdMs - (now() - heldFrom)));
  const q1 = await c.call<number>('statements');
  const heldMs = now() - heldFrom;

  const releasedAt =
    (o.release === 'all' ? await c.call<number>('releaseAll') : await c.call<number>('releaseEach', { intervalMs: o.release })) - offset;
  const answers = await held.answers;
  checkAnswers(answers, true);
  const times = await c.call<{ returnedAt: Record<string, number>; completedAt: Record<string, number> }>('times');
  const completion: number[] = [];
  const returned: number[] = [];
  let lastStored = -Infinity;
  answers.forEach((a, i) => {
    const stored = times.completedAt[ids[i]];
    const ret = times.returnedAt[ids[i]];
    if (stored === undefined || ret === undefined) throw new Error(`no completion time recorded for run ${ids[i]}`);
    completion.push(a.at - (stored - offset));
    returned.push(a.at - (ret - offset));
    lastStored = Math.max(lastStored, stored - offset);
  });
  const lastAnswer = Math.max(...answers.map((a) => a.at));
  return {
    waiters: o.n,
    releaseToLast: lastAnswer - releasedAt,
    releaseToAnswer: stats(answers.map((a) => a.at - releasedAt)),
    completionToAnswer: stats(completion),
    returnToAnswer: stats(returned),
    releaseToLastStored: lastStored - releasedAt,
    lastStoredToLast: lastAnswer - lastStored,
    statementsWhileHeld: q1 - q0,
    heldMs,
    triggerSetupMs,
    ...(before && holding ? { rssBefore: before.rss, rssHolding: holding.rss, rssPerWaiterBytes: (holding.rss - before.rss) / o.n } : {}),
  };
}
