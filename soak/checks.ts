// The invariants the soak checks at the end (docs/soak.md), from the database, the bots' side-effect logs,
// the callback receiver and what the load saw. Each returns what it counted and its violations, with a
// few examples (run ids) to start an investigation from.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Client } from 'pg';
import type { Recorder } from './load.js';
import { SOAK_BOTS, SOAK_LIMITS, type SeedResult } from './shared.js';

export interface Verdict {
  name: string;
  /** What was counted, e.g. "12,345 runs". */
  counted: string;
  violations: number;
  examples: string[];
  /** Further figures printed under the line. */
  notes?: string[];
}

export interface Row {
  id: string;
  trigger_id: string;
  bot_id: string;
  account_id: string;
  status: string;
  outputs: string | null;
  error: string | null;
  credits: number;
  created_at: string;
  started_at: string | null;
  attempts: number;
}

export interface Delivered {
  valid: number;
  invalid: number;
  statuses: Set<string>;
}

export const fmt = (n: number) => n.toLocaleString('en-US');

export async function readRows(db: Client): Promise<Row[]> {
  const { rows } = await db.query<Row>(
    `SELECT id, trigger_id, bot_id, account_id, status, outputs, error, credits, created_at, started_at, attempts FROM webhook_invocations`,
  );
  return rows;
}

/** Run id → how often each bot body started and returned, from every process's side-effect log. */
export function readEffects(dir: string): Map<string, { starts: number; ends: number }> {
  const effects = new Map<string, { starts: number; ends: number }>();
  for (const file of readdirSync(dir).filter((f) => f.startsWith('effects-'))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      const [id, what] = line.split(' ');
      if (!id || !what) continue;
      const e = effects.get(id) ?? { starts: 0, ends: 0 };
      if (what === 'start') e.starts++;
      else if (what === 'end') e.ends++;
      effects.set(id, e);
    }
  }
  return effects;
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed_out']);

const errorCode = (row: Row): string | undefined => (row.error ? (JSON.parse(row.error) as { code?: string }).code : undefined);

/** What GET …/sync and the `done` event answer for a finished run (the library's syncBody). */
function syncBody(row: Row): unknown {
  const outputs = row.outputs ? (JSON.parse(row.outputs) as unknown[]) : [];
  if (row.status === 'succeeded') return { success: true, outputs };
  return { success: false, status: row.status, outputs, error: row.error ? (JSON.parse(row.error) as unknown) : { message: '?' } };
}

export function checkTerminal(rows: Row[], recorder: Recorder, settledMs: number): Verdict {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const examples: string[] = [];
  let violations = 0;
  for (const r of rows) {
    if (TERMINAL.has(r.status)) continue;
    violations++;
    if (examples.length < 5) examples.push(`${r.id} (${r.bot_id}) still ${r.status}, attempts ${r.attempts}`);
  }
  let missing = 0;
  for (const id of recorder.accepted.keys()) {
    if (byId.has(id)) continue;
    missing++;
    if (examples.length < 10) examples.push(`${id} answered 200 but has no row`);
  }
  const byStatus = new Map<string, number>();
  for (const r of rows) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
  return {
    name: 'every accepted run is terminal',
    counted: `${fmt(rows.length)} runs (${fmt(recorder.accepted.size)} seen answered 200 by the load)`,
    violations: violations + missing,
    examples,
    notes: [
      [...byStatus].map(([s, n]) => `${s} ${fmt(n)}`).join(', '),
      `settled ${(settledMs / 1000).toFixed(1)} s after the load ended${missing ? `; ${missing} accepted ids have no row` : ''}`,
    ],
  };
}

export async function checkCredits(db: Client, rows: Row[], seed: SeedResult): Promise<Verdict> {
  const { rows: accounts } = await db.query<{ id: string; credits: string }>(`SELECT id, credits FROM webhook_accounts`);
  const examples: string[] = [];
  let violations = 0;
  const notes: string[] = [];
  for (const a of accounts) {
    const initial = seed.credits[a.id];
    if (initial === undefined) continue;
    const spent = initial - Number(a.credits);
    const charged = rows.filter((r) => r.account_id === a.id).reduce((sum, r) => sum + r.credits, 0);
    // A run cancelled while queued never started (started_at null) and was refunded. The load cancels only
    // runs of bots without retryInterrupted, which never go back to queued once started.
    const refunded = rows
      .filter((r) => r.account_id === a.id && r.status === 'cancelled' && r.started_at === null)
      .reduce((sum, r) => sum + r.credits, 0);
    const diff = spent - (charged - refunded);
    notes.push(`${a.id}: spent ${fmt(spent)} = charged ${fmt(charged)} − refunded ${fmt(refunded)}${diff ? ` (off by ${diff})` : ''}`);
    if (diff !== 0) {
      violations += Math.abs(diff);
      examples.push(`${a.id}: spent ${spent}, expected ${charged - refunded}`);
    }
  }
  return {
    name: 'credits spent = credits of accepted runs − refunds of cancelled queued runs',
    counted: `${accounts.length} accounts`,
    violations,
    examples,
    notes,
  };
}

export function checkBodies(rows: Row[], effects: Map<string, { starts: number; ends: number }>): Verdict[] {
  const retryBots = new Set<string>(
    Object.values(SOAK_BOTS)
      .filter((b) => b.id === 'retry')
      .map((b) => b.id),
  );
  let once = 0;
  let onceViolations = 0;
  let interrupted = 0;
  const onceExamples: string[] = [];
  let retried = 0;
  let retriedViolations = 0;
  let tooOften = 0;
  let moreThanOnce = 0;
  const retriedExamples: string[] = [];
  for (const r of rows) {
    const e = effects.get(r.id) ?? { starts: 0, ends: 0 };
    const code = errorCode(r);
    if (!retryBots.has(r.bot_id)) {
      once++;
      if (code === 'interrupted') interrupted++;
      // At most once; and at least once when the outcome came from the body (not cancelled, interrupted or never started).
      const ranItsCourse = r.status === 'succeeded' || r.status === 'timed_out' || (r.status === 'failed' && code === undefined);
      if (e.starts > 1 || (ranItsCourse && e.starts !== 1)) {
        onceViolations++;
        if (onceExamples.length < 5)
          onceExamples.push(`${r.id} (${r.bot_id}, ${r.status}${code ? ` ${code}` : ''}) body started ${e.starts}×`);
      }
      continue;
    }
    retried++;
    if (e.starts > 1) moreThanOnce++;
    if (r.status === 'failed' && code === 'interrupted_too_often') {
      tooOften++;
      continue;
    }
    if (r.status === 'succeeded' && (e.starts < 1 || e.ends < 1)) {
      retriedViolations++;
      if (retriedExamples.length < 5) retriedExamples.push(`${r.id} succeeded, body started ${e.starts}×, returned ${e.ends}×`);
    }
  }
  return [
    {
      name: 'a default bot body ran at most once per run (exactly once when its outcome is its own)',
      counted: `${fmt(once)} runs (${fmt(interrupted)} stored failed "interrupted")`,
      violations: onceViolations,
      examples: onceExamples,
    },
    {
      name: 'a retryInterrupted body ran at least once per succeeded run',
      counted: `${fmt(retried)} runs (${fmt(moreThanOnce)} ran more than once; ${fmt(tooOften)} failed interrupted_too_often)`,
      violations: retriedViolations,
      examples: retriedExamples,
    },
  ];
}

export async function checkFinishedOnce(db: Client, rows: Row[], seed: SeedResult): Promise<Verdict> {
  // The invocation.completed delivery is written with the run's final change: one row per run means one final change.
  const withCallback = new Set(seed.triggers.filter((t) => t.callbackSecret).map((t) => t.id));
  const { rows: counts } = await db.query<{ invocation_id: string; n: string }>(
    `SELECT invocation_id, count(*) AS n FROM webhook_callback_deliveries WHERE event = 'invocation.completed' GROUP BY invocation_id`,
  );
  const n = new Map(counts.map((c) => [c.invocation_id, Number(c.n)]));
  const examples: string[] = [];
  let violations = 0;
  let checked = 0;
  for (const r of rows) {
    if (!withCallback.has(r.trigger_id) || !TERMINAL.has(r.status)) continue;
    checked++;
    if ((n.get(r.id) ?? 0) !== 1) {
      violations++;
      if (examples.length < 5) examples.push(`${r.id} (${r.bot_id}, ${r.status}) has ${n.get(r.id) ?? 0} completion deliveries`);
    }
  }
  return {
    name: 'every run finished once (one stored completion per run of a callback trigger)',
    counted: `${fmt(checked)} runs`,
    violations,
    examples,
  };
}

export function checkAnswers(rows: Row[], recorder: Recorder): Verdict[] {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const compare = (answers: Array<{ id: string; body: unknown }>) => {
    const examples: string[] = [];
    let violations = 0;
    for (const a of answers) {
      const row = byId.get(a.id);
      if (row && isDeepStrictEqual(a.body, syncBody(row))) continue;
      violations++;
      if (examples.length < 5)
        examples.push(`${a.id}: answered ${JSON.stringify(a.body).slice(0, 160)}, stored ${row ? row.status : 'no row'}`);
    }
    return { violations, examples };
  };
  const sync = compare(recorder.syncAnswers);
  const done = compare(recorder.doneEvents);
  const statuses = [...recorder.statuses].sort(([a], [b]) => a.localeCompare(b));
  const fives = recorder.incidents;
  const idem = recorder.repeatMismatches.length + recorder.conflictsAccepted.length;
  return [
    {
      name: 'every sync answer and every done event matches the stored run',
      counted: `${fmt(recorder.syncAnswers.length)} sync answers, ${fmt(recorder.doneEvents.length)} done events`,
      violations: sync.violations + done.violations,
      examples: [...sync.examples, ...done.examples],
    },
    {
      name: 'an idempotent repeat names the same run; another body under its key is refused',
      counted: `${fmt(recorder.repeatsMatched)} repeats matched, ${fmt(recorder.conflictsRefused)} other bodies refused 422`,
      violations: idem,
      examples: [...recorder.repeatMismatches, ...recorder.conflictsAccepted].slice(0, 5).map((i) => i.detail),
    },
    {
      name: 'no 5xx answer but 503',
      counted: `${fmt(statuses.reduce((s, [, n]) => s + n, 0))} calls`,
      violations: fives.length,
      examples: fives.slice(0, 8).map((i) => `${new Date(i.at).toISOString()} ${i.kind} from ${i.node}: ${i.detail}`),
      notes: [statuses.map(([k, n]) => `${k}: ${fmt(n)}`).join(', ')],
    },
  ];
}

/**
 * A row's created_at is stamped when the service starts the run, after the Redis admission and the body's read
 * (an event-loop turn or more later under load): windows short of the limit's span by less than this are
 * measurement, not a breach.
 */
export const WINDOW_SLACK_MS = 50;
/** How long after Redis answers again the API nodes may still count in their own memory (they switch back on a call). */
const REDIS_SWITCH_BACK_MS = 2_000;

/**
 * Sliding windows from the rows' created_at: no `limit + 1` accepted runs of one key within `ttlMs`. A window
 * that overlaps a Redis outage is counted apart: while Redis is down each API node counts in its own memory
 * (the library's fallback), and the soak's Redis keeps no data, so its windows restart empty.
 */
function windows(
  name: string,
  groups: Map<string, number[]>,
  limit: number,
  ttlMs: number,
  redisRestarts: Array<{ down: number; up: number }>,
): Verdict {
  let violations = 0;
  let excused = 0;
  let slack = 0;
  let checked = 0;
  let fullest = 0;
  const examples: string[] = [];
  for (const [key, times] of groups) {
    times.sort((a, b) => a - b);
    checked += times.length;
    for (let i = 0; i + limit < times.length; i++) {
      const span = times[i + limit] - times[i];
      if (span >= ttlMs) continue;
      if (redisRestarts.some((r) => r.up + REDIS_SWITCH_BACK_MS >= times[i] && r.down <= times[i + limit])) {
        excused++;
        continue;
      }
      if (span >= ttlMs - WINDOW_SLACK_MS) {
        slack++;
        continue;
      }
      violations++;
      if (examples.length < 5) examples.push(`${key}: ${limit + 1} runs within ${span} ms from ${new Date(times[i]).toISOString()}`);
    }
    let j = 0;
    for (let i = 0; i < times.length; i++) {
      while (times[i] - times[j] >= ttlMs) j++;
      fullest = Math.max(fullest, i - j + 1);
    }
  }
  return {
    name,
    counted: `${fmt(checked)} runs over ${groups.size} keys, fullest window ${fmt(fullest)} of ${fmt(limit)}`,
    violations,
    examples,
    notes: [
      excused ? `${fmt(excused)} over-full windows overlap a Redis outage (nodes count alone, windows lost): not counted` : '',
      slack
        ? `${fmt(slack)} windows short of ${ttlMs} ms by less than ${WINDOW_SLACK_MS} ms (created_at is stamped after the admission and the body's read): not counted`
        : '',
    ],
  };
}

export function checkRateLimits(rows: Row[], redisRestarts: Array<{ down: number; up: number }>): Verdict[] {
  const byTrigger = new Map<string, number[]>();
  const byAccount = new Map<string, number[]>();
  for (const r of rows) {
    const at = Number(r.created_at);
    byTrigger.set(r.trigger_id, [...(byTrigger.get(r.trigger_id) ?? []), at]);
    byAccount.set(r.account_id, [...(byAccount.get(r.account_id) ?? []), at]);
  }
  return [
    windows('within any 1 s no trigger accepted more than its limit', byTrigger, SOAK_LIMITS.perTrigger, 1_000, redisRestarts),
    windows('within any 60 s no account accepted more than its limit', byAccount, SOAK_LIMITS.perAccount, 60_000, redisRestarts),
  ];
}

export function checkCallbacks(rows: Row[], seed: SeedResult, delivered: Map<string, Delivered>, invalid: number): Verdict {
  const withCallback = new Set(seed.triggers.filter((t) => t.callbackSecret).map((t) => t.id));
  const examples: string[] = [];
  let violations = invalid;
  let checked = 0;
  let duplicates = 0;
  for (const r of rows) {
    if (!withCallback.has(r.trigger_id) || !TERMINAL.has(r.status)) continue;
    checked++;
    const d = delivered.get(r.id);
    if (d && d.valid > 1) duplicates++;
    if (d && d.valid >= 1 && d.statuses.has(r.status) && d.statuses.size === 1) continue;
    violations++;
    if (examples.length < 5)
      examples.push(`${r.id} (${r.status}): ${d ? `${d.valid} valid, statuses ${[...d.statuses].join('/')}` : 'never delivered'}`);
  }
  if (invalid) examples.push(`${invalid} deliveries with a bad signature`);
  return {
    name: 'every finished run of a trigger with a callback was delivered, signed',
    counted: `${fmt(checked)} runs (${fmt(duplicates)} delivered more than once)`,
    violations,
    examples,
  };
}
