// The several-node figures (issue 5): the module on PostgreSQL + Redis (BullMQ run queue, Redis rate
// limits and cluster bus), every node its own process (contenders/nest-cluster.ts):
//
// - throughput through 2 API nodes (role api) with 2 workers, against ONE node (role all) on the same
//   stack measured in the same run;
// - cross-node wake-up: trigger on API 1, sync on API 2, a short bot on a worker, against one node
//   (role all) with the in-memory bus.
//
// Every set-up gets a fresh scratch PostgreSQL database and its own Redis key prefix, both removed when
// it ends (also on SIGINT/SIGTERM). PostgreSQL or Redis not answering fails the phase (exit 1).
import { randomBytes } from 'node:crypto';
import { Agent, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Redis from 'ioredis';
import { Client } from 'pg';
import { Contender } from './contender.js';
import { httpCall, parseJson, type Answer } from './http.js';
import { load, loadProblem, loadSpread, quantile, triggerHeaders, triggerUrl, type LoadResult, type LoadTarget } from './load.js';
import { checkTelemetry, type OtelVariant } from './otel.js';
import type { Row, Target } from './report.js';
import { until } from './waiters.js';
import { now, TRIGGER_BODY, type MemoryReport, type TelemetryReport, type TriggerRef } from '../shared.js';
import type { NestClusterConfig } from '../contenders/nest-cluster.js';
import type { RawPgTriggerConfig } from '../contenders/raw-pg-trigger.js';

export interface ClusterSettings {
  postgresUrl: string;
  redisUrl: string;
  adapter: 'express' | 'fastify';
  /** Connections of the throughput measurement, in total, split evenly over two autocannon instances. */
  connections: number;
  durationS: number;
  warmupS: number;
  /** Sequential trigger→sync samples of the wake-up measurement. */
  samples: number;
  /** How long the `short` bot sleeps, so the sync request is surely waiting when the run finishes. */
  botMs: number;
  /**
   * The OpenTelemetry the module's nodes run with (BENCH_CLUSTER_OTEL; the raw baselines never change):
   * `none` (the API installed, nothing registered), or a preload of the `otel` phase (harness/otel.ts).
   */
  otel: OtelVariant;
}

export interface ThroughputFigures {
  load: LoadResult & { each: LoadResult[] };
  /** 2xx answers autocannon counted during the window. */
  answered2xx: number;
  /**
   * Runs stored (accepted and charged) during the window: rows created in it. A few more than the 2xx
   * answers: requests in flight when autocannon stopped were stored but their answers not counted.
   */
  accepted: number;
  /** Runs stored `succeeded` with finished_at inside the window. */
  succeeded: number;
  windowSeconds: number;
  succeededPerSecond: number;
  /** Runs queued or running when the window ended, and ms until none was. */
  pending: number;
  drainMs: number;
  /** Runs per executing process (owner pid) over the whole set-up: shows both workers took part. */
  runsByPid: Record<string, number>;
  /** Sum of every process's peak RSS up to the end of the measurement, bytes. */
  peakRssSum: number;
  /** Per process (by name), over the window, divided by the runs accepted in it: the scaling model's inputs. */
  perRun: Record<string, { cpuMs: number; pgQueries: number; redisCommands: number }>;
}

/** What `counters` answers in a cluster contender. */
interface Counters {
  pgQueries: number;
  redisCommands: number;
  cpu: { user: number; system: number };
}

export interface WakeFigures {
  samples: number;
  /** Samples whose sync request reached the API node after the run was already stored (no wake-up). */
  notWaiting: number;
  /** ms, from the outcome being committed (the module publishing "run finished") to the whole sync answer. */
  storedToAnswer: Stats;
  /** ms, from the stored finished_at (ms resolution, the worker's wall clock) to the answer, as the scale-out test measures. */
  finishedAtToAnswer: Stats;
  /** ms, from the bot's main() returning to the answer. */
  returnToAnswer: Stats;
  /**
   * ms, from the outcome being committed to the end of the run's event stream (`…/events`, opened beside
   * the sync on the same node, read whole: it closes right after `done`).
   */
  storedToDone: Stats;
  /** ms, from sending the trigger POST to having the whole sync answer (includes the bot's sleep). */
  triggerToAnswer: Stats;
  /**
   * ms, from the outcome being committed to its signed `invocation.completed` callback having arrived at a loopback
   * receiver (node:http in this process, answering 204), sent by the process that ran the bot.
   */
  storedToCallback: Stats;
}

/** A loopback callback receiver: when each run's `invocation.completed` arrived, on our clock. */
async function startCallbackReceiver(): Promise<{ url: string; arrived: Map<string, number>; close: () => Promise<void> }> {
  const arrived = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = now();
      let id: unknown;
      try {
        id = (JSON.parse(Buffer.concat(chunks).toString()) as { data?: { invocation?: { id?: unknown } } }).data?.invocation?.id;
      } catch {
        id = undefined;
      }
      if (typeof id === 'string' && !arrived.has(id)) arrived.set(id, at);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/runs`,
    arrived,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Stats {
  p50: number;
  p99: number;
  max: number;
}

export interface ClusterResult {
  services?: { postgres: string; redis: string };
  /** Baseline: one node, role all, same stack. */
  oneThroughput?: ThroughputFigures;
  clusterThroughput?: ThroughputFigures;
  /** Baseline: one node, role all, in-memory bus. */
  oneWake?: WakeFigures;
  clusterWake?: WakeFigures;
  /** One node (role all, same stack as `oneThroughput`) at 1 connection. */
  oneSingle?: LoadResult;
  /** One node on PostgreSQL alone (in-process runner, rate limits and bus), `connections` and 1 connection. */
  localThroughput?: ThroughputFigures;
  localSingle?: LoadResult;
  /** The raw PostgreSQL baselines (contenders/raw-pg-trigger.ts), by commit mode and connections. */
  rawPg?: Partial<Record<RawPgTriggerConfig['commit'], RawPgFigures>>;
  /** The raw whole-runs baseline (raw-pg-trigger with `runs`: accept, claim, finish, each grouped), at `connections`. */
  rawRuns?: RawRunsFigures;
  /** Slow-bot capacity of the 2 workers at default slots: one account, one-second runs, how many ran at once. */
  capacity?: CapacityFigures;
  failures: {
    oneThroughput?: string;
    clusterThroughput?: string;
    oneWake?: string;
    clusterWake?: string;
    oneSingle?: string;
    localThroughput?: string;
    localSingle?: string;
    rawPgRequest?: string;
    rawPgGroup?: string;
    rawRuns?: string;
    capacity?: string;
  };
}

export interface CapacityFigures {
  /** Runs triggered at once: workers × the default `maxConcurrentRuns`. */
  runs: number;
  /** Most of them running at once, from their stored `started_at` / `finished_at`. */
  atOnce: number;
  /** ms from the first trigger to the last run stored finished. */
  ms: number;
}

/** The module's default `maxConcurrentRuns`, which the bench's workers keep. */
const DEFAULT_SLOTS = 64;
/** How long each run of the capacity measurement sleeps. */
const CAPACITY_BOT_MS = 1000;

export interface RawRunsFigures {
  load: LoadResult;
  accepted: number;
  succeeded: number;
  windowSeconds: number;
  succeededPerSecond: number;
}

export interface RawPgFigures {
  /** By connections (1 and the phase's `connections`). */
  load: Record<number, LoadResult>;
  /** Group mode: requests per committed transaction over the whole set-up (warm-ups included). */
  perBatch?: number;
}

type Log = (message: string) => void;

const DRAIN_TIMEOUT_MS = 180_000;
const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

// ---------------------------------------------------------------------------------------------------
// Services and scratch resources
// ---------------------------------------------------------------------------------------------------

const cleanups = new Set<() => Promise<void>>();
let signalsHooked = false;

/** On SIGINT/SIGTERM (e.g. `timeout` in CI), drop what the running set-up created before exiting. */
function hookSignals(): void {
  if (signalsHooked) return;
  signalsHooked = true;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`bench: ${signal}: removing the scratch database and Redis keys\n`);
      const all = Promise.allSettled([...cleanups].map((c) => c()));
      const cap = new Promise((r) => setTimeout(r, 10_000));
      void Promise.race([all, cap]).then(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
}

function redisClient(url: string): Redis {
  return new Redis(url, {
    lazyConnect: true,
    connectTimeout: 5_000,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
}

/** Fails with a message naming the service when PostgreSQL or Redis does not answer; returns their versions. */
async function checkServices(s: ClusterSettings): Promise<{ postgres: string; redis: string }> {
  const pg = new Client({ connectionString: s.postgresUrl, connectionTimeoutMillis: 5_000 });
  let postgres: string;
  try {
    await pg.connect();
    postgres = String((await pg.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0].v).split(' ')[0];
  } catch (e) {
    throw new Error(
      `PostgreSQL at ${redact(s.postgresUrl)} does not answer (${errorText(e)}); set WEBHOOK_TEST_POSTGRES_URL, or leave "cluster" out of BENCH_ONLY`,
    );
  } finally {
    await pg.end().catch(() => undefined);
  }
  const redis = redisClient(s.redisUrl);
  let cause: unknown;
  redis.on('error', (e: unknown) => (cause ??= e));
  let version: string;
  try {
    await redis.connect();
    version = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
  } catch (e) {
    throw new Error(
      `Redis at ${redact(s.redisUrl)} does not answer (${errorText(cause ?? e)}); set WEBHOOK_TEST_REDIS_URL, or leave "cluster" out of BENCH_ONLY`,
    );
  } finally {
    redis.disconnect();
  }
  return { postgres, redis: version };
}

/** The URL without its password, for messages and bench/results.json. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'an invalid URL';
  }
}

interface Scratch {
  databaseUrl: string;
  keyPrefix: string;
  /** Connected to the scratch database, for the orchestrator's own reads. */
  pg: Client;
  remove(): Promise<void>;
}

/** A fresh database on the server of `postgresUrl` and a fresh Redis key prefix. */
async function createScratch(s: ClusterSettings): Promise<Scratch> {
  const hex = randomBytes(6).toString('hex');
  const name = `webhook_bench_${hex}`;
  const keyPrefix = `webhook-bench:${hex}:`;
  const admin = new Client({ connectionString: s.postgresUrl, connectionTimeoutMillis: 5_000 });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(s.postgresUrl);
  url.pathname = `/${name}`;
  const pg = new Client({ connectionString: url.toString() });
  let removed: Promise<void> | undefined;
  const remove = () =>
    (removed ??= (async () => {
      await pg.end().catch(() => undefined);
      const dropper = new Client({ connectionString: s.postgresUrl, connectionTimeoutMillis: 5_000 });
      await dropper.connect();
      try {
        await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await dropper.end();
      }
      await deleteKeys(s.redisUrl, keyPrefix);
    })().finally(() => cleanups.delete(remove)));
  cleanups.add(remove);
  try {
    await pg.connect();
  } catch (e) {
    await remove();
    throw e;
  }
  return { databaseUrl: url.toString(), keyPrefix, pg, remove };
}

async function deleteKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = redisClient(redisUrl);
  redis.on('error', () => undefined);
  await redis.connect();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------------
// Nodes
// ---------------------------------------------------------------------------------------------------

interface Nodes {
  /** Nodes serving HTTP (role api or all), in order; the first created the triggers. */
  http: Contender[];
  /** Nodes running bots (role worker or all). */
  runners: Contender[];
  all: Contender[];
  triggers: Record<string, TriggerRef>;
}

/**
 * Starts the first node alone (it migrates the empty database and creates the triggers), then the
 * others together. `layout` lists roles; the first must serve HTTP.
 */
async function startNodes(
  script: string,
  flags: string[],
  s: ClusterSettings,
  scratch: Scratch,
  layout: Array<{ name: string; role: NestClusterConfig['role'] }>,
  bus: NestClusterConfig['bus'],
  started: Contender[],
  stack: NestClusterConfig['stack'] = 'redis',
): Promise<Nodes> {
  const config = (role: NestClusterConfig['role'], seed: boolean): NestClusterConfig => ({
    role,
    adapter: s.adapter,
    databaseUrl: scratch.databaseUrl,
    redisUrl: s.redisUrl,
    keyPrefix: scratch.keyPrefix,
    bus,
    seed,
    stack,
  });
  const [first, ...rest] = layout;
  const seeded = await Contender.start(first.name, script, config(first.role, true), flags);
  started.push(seeded);
  const others = await Promise.all(
    rest.map(async (n) => {
      const c = await Contender.start(n.name, script, config(n.role, false), flags);
      started.push(c);
      return c;
    }),
  );
  const all = [seeded, ...others];
  const roleOf = (c: Contender) => layout[all.indexOf(c)].role;
  return {
    http: all.filter((c) => roleOf(c) !== 'worker'),
    runners: all.filter((c) => roleOf(c) !== 'api'),
    all,
    triggers: seeded.ready.triggers!,
  };
}

const pidOfOwner = (owner: string | null) => owner?.split(':')[1];

/**
 * Waits until no run is queued or running and no row has been added for 500 ms: requests still in
 * flight when autocannon stopped (it does not wait for their answers) are stored late, and must not
 * land in the next measurement's window.
 */
async function settle(pg: Client): Promise<{ ms: number; pendingAtStart: number }> {
  const start = now();
  const total = async () => Number((await pg.query<{ n: string }>('SELECT count(*) AS n FROM webhook_invocations')).rows[0].n);
  let pendingAtStart = 0;
  for (let last = -1, n = await total(); n !== last; last = n, n = await total()) {
    const drained = await drain(pg);
    if (last === -1) pendingAtStart = drained.pendingAtStart;
    await new Promise((r) => setTimeout(r, 500));
  }
  return { ms: now() - start, pendingAtStart };
}

async function drain(pg: Client, timeoutMs = DRAIN_TIMEOUT_MS): Promise<{ ms: number; pendingAtStart: number }> {
  const pending = async () =>
    Number(
      (await pg.query<{ n: string }>("SELECT count(*) AS n FROM webhook_invocations WHERE status IN ('queued', 'running')")).rows[0].n,
    );
  const start = now();
  const pendingAtStart = await pending();
  if (pendingAtStart > 0) await until('no run is queued or running', async () => (await pending()) === 0, timeoutMs, 50);
  return { ms: now() - start, pendingAtStart };
}

/** Trigger on each HTTP node, sync on the next one: 200 with the echoed input, run by a runner process. */
async function sanityCheck(nodes: Nodes, pg: Client): Promise<void> {
  const agent = new Agent({ keepAlive: false });
  try {
    const t = nodes.triggers.echo;
    for (let i = 0; i < nodes.http.length; i++) {
      const on = nodes.http[i];
      const next = nodes.http[(i + 1) % nodes.http.length];
      const target: LoadTarget = { port: on.port, trigger: t };
      const a = await httpCall(agent, { method: 'POST', url: triggerUrl(target), headers: triggerHeaders(target), body: TRIGGER_BODY });
      const id = parseJson(a)?.invocation?.id;
      if (a.status !== 200 || typeof id !== 'string')
        throw new Error(`sanity check: trigger on ${on.name} answered HTTP ${a.status}: ${a.text.slice(0, 200)}`);
      const s = await httpCall(agent, {
        url: `${triggerUrl({ port: next.port, trigger: t })}/invocation/${id}/sync`,
        headers: { 'x-key': t.key },
      });
      const body = parseJson(s);
      if (s.status !== 200 || body?.success !== true || body?.outputs?.[0]?.message !== 'hello') {
        throw new Error(
          `sanity check: sync on ${next.name} expected 200 with the echoed "hello", got HTTP ${s.status}: ${s.text.slice(0, 200)}`,
        );
      }
      const owner =
        (await pg.query<{ owner: string | null }>('SELECT owner FROM webhook_invocations WHERE id = $1', [id])).rows[0]?.owner ?? null;
      if (!nodes.runners.some((r) => String(r.pid) === pidOfOwner(owner))) {
        throw new Error(
          `sanity check: run ${id} was executed by ${owner}, not by a worker process (${nodes.runners.map((r) => r.pid).join(', ')})`,
        );
      }
    }
  } finally {
    agent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------------
// Measurements
// ---------------------------------------------------------------------------------------------------

async function measureThroughput(nodes: Nodes, pg: Client, s: ClusterSettings, log: Log): Promise<ThroughputFigures> {
  // Two autocannon instances either way: over both API nodes, or both on the one node.
  const targets: LoadTarget[] = [0, 1].map((i) => ({ port: nodes.http[i % nodes.http.length].port, trigger: nodes.triggers.echo }));
  const per = Math.max(1, Math.round(s.connections / targets.length));
  const checked = (r: LoadResult & { each: LoadResult[] }, what: string) => {
    const problem = loadProblem(r);
    if (problem) throw new Error(`${what}: ${problem}`);
    for (const c of nodes.all) c.assertAlive();
    return r;
  };
  await sanityCheck(nodes, pg);
  if (s.warmupS > 0) {
    log(`  warm-up: ${per * targets.length} connections, ${s.warmupS} s`);
    checked(await loadSpread(targets, per, s.warmupS), 'warm-up');
  }
  const drained = await settle(pg);
  if (drained.pendingAtStart) log(`  drained ${drained.pendingAtStart} background runs in ${(drained.ms / 1000).toFixed(1)} s`);
  log(`  measure: ${per * targets.length} connections (${targets.length} × ${per}), ${s.durationS} s`);
  const before = await Promise.all(nodes.all.map((c) => c.call<Counters>('counters')));
  const from = Date.now();
  const r = checked(await loadSpread(targets, per, s.durationS), `${per * targets.length} connections`);
  const to = Date.now();
  const after = await Promise.all(nodes.all.map((c) => c.call<Counters>('counters')));
  const counts = (
    await pg.query<{ created: string; succeeded: string; pending: string; bad: string }>(
      `SELECT count(*) FILTER (WHERE created_at >= $1 AND created_at <= $2) AS created,
              count(*) FILTER (WHERE status = 'succeeded' AND finished_at >= $1 AND finished_at <= $2) AS succeeded,
              count(*) FILTER (WHERE status IN ('queued', 'running')) AS pending,
              count(*) FILTER (WHERE status NOT IN ('queued', 'running', 'succeeded')) AS bad
         FROM webhook_invocations`,
      [from, to],
    )
  ).rows[0];
  const peakRssSum = (await Promise.all(nodes.all.map((c) => c.call<MemoryReport>('memory')))).reduce((n, m) => n + m.peakRss, 0);
  const accepted = Math.max(1, Number(counts.created));
  const perRun: ThroughputFigures['perRun'] = {};
  nodes.all.forEach((c, i) => {
    const [a, b] = [before[i], after[i]];
    perRun[c.name] = {
      cpuMs: (b.cpu.user + b.cpu.system - a.cpu.user - a.cpu.system) / 1000 / accepted,
      pgQueries: (b.pgQueries - a.pgQueries) / accepted,
      redisCommands: (b.redisCommands - a.redisCommands) / accepted,
    };
  });
  log(
    `    per run accepted: ${Object.entries(perRun)
      .map(
        ([name, p]) =>
          `${name} ${p.cpuMs.toFixed(3)} ms CPU, ${p.pgQueries.toFixed(2)} pg queries, ${p.redisCommands.toFixed(2)} Redis commands`,
      )
      .join('; ')}`,
  );
  log(
    `    ${Math.round(r.rps)} req/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms; ${counts.created} runs accepted and ${counts.succeeded} succeeded in the window, ${counts.pending} pending; ${r.refused} answered 503 (backlog full)`,
  );
  const backlog = await drain(pg);
  log(`  ${backlog.pendingAtStart} runs were pending at the end; finished in ${(backlog.ms / 1000).toFixed(1)} s`);
  const bad = (
    await pg.query<{ status: string; n: string; error: string | null }>(
      "SELECT status, count(*) AS n, min(error) AS error FROM webhook_invocations WHERE status <> 'succeeded' GROUP BY status",
    )
  ).rows;
  if (bad.length) throw new Error(`runs that did not succeed: ${bad.map((b) => `${b.n} ${b.status} (e.g. ${b.error})`).join(', ')}`);
  const byOwner = (
    await pg.query<{ owner: string | null; n: string }>('SELECT owner, count(*) AS n FROM webhook_invocations GROUP BY owner')
  ).rows;
  const runsByPid: Record<string, number> = {};
  for (const o of byOwner) runsByPid[pidOfOwner(o.owner) ?? 'none'] = (runsByPid[pidOfOwner(o.owner) ?? 'none'] ?? 0) + Number(o.n);
  log(
    `  runs per executing process (pid: runs): ${Object.entries(runsByPid)
      .map(([p, n]) => `${p}: ${n}`)
      .join(', ')}`,
  );
  const windowSeconds = (to - from) / 1000;
  return {
    load: r,
    answered2xx: r.ok,
    accepted: Number(counts.created),
    succeeded: Number(counts.succeeded),
    windowSeconds,
    succeededPerSecond: Number(counts.succeeded) / windowSeconds,
    pending: backlog.pendingAtStart,
    drainMs: backlog.ms,
    runsByPid,
    peakRssSum,
    perRun,
  };
}

interface Sample {
  id: string;
  sentAt: number;
  answer: Answer;
  /** The run's event stream, read to its end (after `done`). */
  stream: Answer;
  /** now() − Date.now() in this process when the answer arrived: turns `answer.at` into wall-clock ms. */
  skew: number;
}

/**
 * `samples` runs of `short` one after another: trigger on `triggerNode`, then at once sync on `syncNode`
 * (which waits: the bot sleeps `botMs`). Times recorded in the processes are moved onto our clock.
 */
async function measureWake(
  nodes: Nodes,
  triggerNode: Contender,
  syncNode: Contender,
  pg: Client,
  s: ClusterSettings,
): Promise<WakeFigures> {
  await settle(pg); // nothing left from a previous measurement
  const t = nodes.triggers.short;
  const offsets = new Map<Contender, number>();
  for (const c of nodes.all) offsets.set(c, await c.clockOffset());
  const agents = new Map<Contender, Agent>();
  const agentOf = (c: Contender) => agents.get(c) ?? agents.set(c, new Agent({ keepAlive: true, maxSockets: 1 })).get(c)!;
  const streamAgent = new Agent({ keepAlive: false });
  const body = JSON.stringify({ ms: s.botMs });
  const once = async (): Promise<Sample> => {
    const sentAt = now();
    const a = await httpCall(agentOf(triggerNode), {
      method: 'POST',
      url: triggerUrl({ port: triggerNode.port, trigger: t }),
      headers: triggerHeaders({ port: 0, trigger: t }),
      body,
    });
    const id = parseJson(a)?.invocation?.id;
    if (a.status !== 200 || typeof id !== 'string') throw new Error(`wake-up: trigger answered HTTP ${a.status}: ${a.text.slice(0, 200)}`);
    const [answer, stream] = await Promise.all([
      httpCall(agentOf(syncNode), {
        url: `${triggerUrl({ port: syncNode.port, trigger: t })}/invocation/${id}/sync`,
        headers: { 'x-key': t.key },
      }),
      // Its own connection (the stream answers `Connection: close`), opened with the sync.
      httpCall(streamAgent, {
        url: `${triggerUrl({ port: syncNode.port, trigger: t })}/invocation/${id}/events`,
        headers: { 'x-key': t.key },
      }),
    ]);
    if (stream.status !== 200 || !stream.text.includes('event: done')) {
      throw new Error(`wake-up: the event stream answered HTTP ${stream.status}: ${stream.text.slice(0, 200)}`);
    }
    const skew = now() - Date.now();
    const synced = parseJson(answer);
    if (answer.status !== 200 || synced?.success !== true || synced?.outputs?.[0]?.message !== String(s.botMs)) {
      throw new Error(`wake-up: sync answered HTTP ${answer.status}: ${answer.text.slice(0, 200)}`);
    }
    return { id, sentAt, answer, stream, skew };
  };
  const samples: Sample[] = [];
  // The short trigger gets a callback to a loopback receiver (written as the admin would store it, secret in clear:
  // the nodes have no keySecret), so each sample also measures stored → callback delivered.
  const receiver = await startCallbackReceiver();
  await pg.query(
    `INSERT INTO webhook_callbacks (trigger_id, url, events, secret, enabled, consecutive_failures, disabled_reason, created_at, updated_at) ` +
      `VALUES ($1, $2, 'invocation.completed', $3, 1, 0, NULL, $4, $4) ON CONFLICT (trigger_id) DO UPDATE SET url = EXCLUDED.url`,
    [t.id, receiver.url, `whsec_${randomBytes(32).toString('base64')}`, Date.now()],
  );
  try {
    await Promise.all(nodes.all.map((c) => c.call('record', { on: true })));
    for (let i = 0; i < 10; i++) await once(); // warm the path and the connections
    await Promise.all(nodes.all.map((c) => c.call('times')));
    for (let i = 0; i < s.samples; i++) samples.push(await once());
    await until("every sample's callback arrived", () => Promise.resolve(samples.every((x) => receiver.arrived.has(x.id))), 30_000);
  } finally {
    for (const a of agents.values()) a.destroy();
    streamAgent.destroy();
    await Promise.all(nodes.all.map((c) => c.call('record', { on: false }).catch(() => undefined)));
    await pg.query('DELETE FROM webhook_callbacks WHERE trigger_id = $1', [t.id]).catch(() => undefined);
    await receiver.close();
  }

  // Every process's records, on our clock.
  const stored = new Map<string, number>();
  const returned = new Map<string, number>();
  const arrived = new Map<string, number>();
  for (const c of nodes.all) {
    const off = offsets.get(c)!;
    const times = await c.call<{
      returnedAt: Record<string, number>;
      storedAt: Record<string, number>;
      syncArrivedAt: Record<string, number>;
    }>('times');
    for (const [id, at] of Object.entries(times.storedAt)) stored.set(id, at - off);
    for (const [id, at] of Object.entries(times.returnedAt)) returned.set(id, at - off);
    if (c === syncNode) for (const [id, at] of Object.entries(times.syncArrivedAt)) arrived.set(id, at - off);
  }
  const rows = (
    await pg.query<{ id: string; finished_at: string; owner: string | null }>(
      'SELECT id, finished_at, owner FROM webhook_invocations WHERE id = ANY($1)',
      [samples.map((x) => x.id)],
    )
  ).rows;
  const rowOf = new Map(rows.map((r) => [r.id, r]));

  const storedToAnswer: number[] = [];
  const finishedAtToAnswer: number[] = [];
  const returnToAnswer: number[] = [];
  const storedToDone: number[] = [];
  const storedToCallback: number[] = [];
  const triggerToAnswer: number[] = [];
  let notWaiting = 0;
  for (const x of samples) {
    const st = stored.get(x.id);
    const ret = returned.get(x.id);
    const arr = arrived.get(x.id);
    const row = rowOf.get(x.id);
    if (st === undefined || ret === undefined || arr === undefined || !row) throw new Error(`wake-up: no times recorded for run ${x.id}`);
    if (!nodes.runners.some((r) => String(r.pid) === pidOfOwner(row.owner)))
      throw new Error(`wake-up: run ${x.id} was executed by ${row.owner}, not by a worker`);
    triggerToAnswer.push(x.answer.at - x.sentAt);
    // Sent by the worker itself, whether or not a sync was waiting.
    storedToCallback.push(receiver.arrived.get(x.id)! - st);
    if (arr > st) {
      // The run was already stored when the sync came in: answered from the row, not woken.
      notWaiting++;
      continue;
    }
    storedToAnswer.push(x.answer.at - st);
    storedToDone.push(x.stream.at - st);
    returnToAnswer.push(x.answer.at - ret);
    finishedAtToAnswer.push(x.answer.at - x.skew - Number(row.finished_at));
  }
  if (storedToAnswer.length === 0)
    throw new Error(`wake-up: in none of ${samples.length} samples was the sync request waiting when the run finished`);
  return {
    samples: samples.length,
    notWaiting,
    storedToAnswer: stats(storedToAnswer),
    finishedAtToAnswer: stats(finishedAtToAnswer),
    returnToAnswer: stats(returnToAnswer),
    storedToDone: stats(storedToDone),
    triggerToAnswer: stats(triggerToAnswer),
    storedToCallback: stats(storedToCallback),
  };
}

function stats(values: number[]): Stats {
  return { p50: quantile(values, 0.5), p99: quantile(values, 0.99), max: Math.max(...values) };
}

// ---------------------------------------------------------------------------------------------------
// The phase
// ---------------------------------------------------------------------------------------------------

/**
 * The raw PostgreSQL baseline in one commit mode: a scratch database (the contender runs the module's
 * migrations on it), then 1 and `connections` connections on one autocannon instance each, every load
 * after a warm-up; the scratch database is dropped afterwards.
 */
async function measureRawPg(
  commit: RawPgTriggerConfig['commit'],
  rawScript: string,
  flags: string[],
  s: ClusterSettings,
  log: Log,
): Promise<RawPgFigures> {
  log(`▶ raw PostgreSQL baseline, ${commit === 'group' ? 'group commit' : 'one transaction per request'}`);
  const scratch = await createScratch(s);
  let c: Contender | undefined;
  try {
    const config: RawPgTriggerConfig = { databaseUrl: scratch.databaseUrl, commit, poolSize: 20, credits: 1_000_000_000_000 };
    c = await Contender.start(`raw-pg-${commit}`, rawScript, config, flags);
    const target: LoadTarget = { port: c.port, trigger: c.ready.triggers!.echo };
    const figures: RawPgFigures = { load: {} };
    for (const connections of [1, s.connections]) {
      if (s.warmupS > 0) await load(target, connections, s.warmupS);
      const r = await load(target, connections, s.durationS);
      const problem = loadProblem(r);
      if (problem) throw new Error(`${connections} connections: ${problem}`);
      c.assertAlive();
      log(`    ${connections} conn: ${Math.round(r.rps)} req/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`);
      figures.load[connections] = r;
    }
    // Every 2xx answer must be a stored row and a debited credit (nothing lost, nothing free).
    const check = (
      await scratch.pg.query<{ runs: string; spent: string }>(
        "SELECT (SELECT count(*) FROM webhook_invocations) AS runs, (SELECT 1000000000000 - credits FROM webhook_accounts WHERE id = 'bench') AS spent",
      )
    ).rows[0];
    if (check.runs !== check.spent) throw new Error(`${check.runs} runs stored but ${check.spent} credits debited`);
    if (commit === 'group') {
      const st = await c.call<{ batches: number; batched: number }>('stats');
      figures.perBatch = st.batches ? st.batched / st.batches : 0;
      log(`    ${st.batched} requests in ${st.batches} transactions (${figures.perBatch.toFixed(1)} per transaction)`);
    }
    return figures;
  } finally {
    await c?.stop();
    await scratch.remove().catch((e: unknown) => log(`  could not remove the scratch database: ${errorText(e)}`));
  }
}

/** The raw whole-runs baseline: runs accepted, claimed and finished (each grouped) per second at `connections`. */
async function measureRawRuns(rawScript: string, flags: string[], s: ClusterSettings, log: Log): Promise<RawRunsFigures> {
  log('▶ raw PostgreSQL baseline, whole runs (accept, claim, finish: each grouped, one batch in flight per stage)');
  const scratch = await createScratch(s);
  let c: Contender | undefined;
  try {
    const config: RawPgTriggerConfig = {
      databaseUrl: scratch.databaseUrl,
      commit: 'group',
      poolSize: 20,
      credits: 1_000_000_000_000,
      runs: true,
    };
    c = await Contender.start('raw-pg-runs', rawScript, config, flags);
    const target: LoadTarget = { port: c.port, trigger: c.ready.triggers!.echo };
    if (s.warmupS > 0) await load(target, s.connections, s.warmupS);
    await settle(scratch.pg);
    const from = Date.now();
    const r = await load(target, s.connections, s.durationS);
    const to = Date.now();
    const problem = loadProblem(r);
    if (problem) throw new Error(`${s.connections} connections: ${problem}`);
    c.assertAlive();
    const counts = (
      await scratch.pg.query<{ created: string; succeeded: string }>(
        `SELECT count(*) FILTER (WHERE created_at >= $1 AND created_at <= $2) AS created,
                count(*) FILTER (WHERE status = 'succeeded' AND finished_at >= $1 AND finished_at <= $2) AS succeeded
           FROM webhook_invocations`,
        [from, to],
      )
    ).rows[0];
    const windowSeconds = (to - from) / 1000;
    const figures = {
      load: r,
      accepted: Number(counts.created),
      succeeded: Number(counts.succeeded),
      windowSeconds,
      succeededPerSecond: Number(counts.succeeded) / windowSeconds,
    };
    log(
      `    ${s.connections} conn: ${Math.round(r.rps)} req/s; ${figures.accepted} runs accepted and ${figures.succeeded} finished in the window (${Math.round(figures.succeededPerSecond)}/s)`,
    );
    await drain(scratch.pg);
    return figures;
  } finally {
    await c?.stop();
    await scratch.remove().catch((e: unknown) => log(`  could not remove the scratch database: ${errorText(e)}`));
  }
}

/**
 * Slow-bot capacity: `workers × DEFAULT_SLOTS` one-second runs of one account, triggered at once over the API
 * nodes; how many ran at once (from the stored times). Every worker slot is the account's: N × S.
 */
async function measureCapacity(nodes: Nodes, pg: Client, workers: number, log: Log): Promise<CapacityFigures> {
  const runs = workers * DEFAULT_SLOTS;
  log(`  slow-bot capacity: ${runs} runs of a ${CAPACITY_BOT_MS} ms bot, one account, ${workers} workers × ${DEFAULT_SLOTS} slots`);
  const agent = new Agent({ keepAlive: true, maxSockets: runs });
  const t0 = Date.now();
  try {
    const ids = await Promise.all(
      Array.from({ length: runs }, async (_, i) => {
        const target: LoadTarget = { port: nodes.http[i % nodes.http.length].port, trigger: nodes.triggers.short };
        const a = await httpCall(agent, {
          method: 'POST',
          url: triggerUrl(target),
          headers: triggerHeaders(target),
          body: JSON.stringify({ ms: CAPACITY_BOT_MS }),
        });
        const id = parseJson(a)?.invocation?.id;
        if (a.status !== 200 || typeof id !== 'string') throw new Error(`capacity trigger: HTTP ${a.status}: ${a.text.slice(0, 200)}`);
        return id;
      }),
    );
    const finished = async () =>
      Number(
        (await pg.query<{ n: string }>("SELECT count(*) AS n FROM webhook_invocations WHERE id = ANY($1) AND status = 'succeeded'", [ids]))
          .rows[0].n,
      ) === runs;
    await until('the slow runs to succeed', finished, 60_000, 50);
    const { rows } = await pg.query<{ started_at: string; finished_at: string }>(
      'SELECT started_at, finished_at FROM webhook_invocations WHERE id = ANY($1)',
      [ids],
    );
    const edges = rows
      .flatMap((r) => [
        [Number(r.started_at), 1],
        [Number(r.finished_at), -1],
      ])
      .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let running = 0;
    let atOnce = 0;
    for (const [, step] of edges) atOnce = Math.max(atOnce, (running += step));
    const ms = Math.max(...rows.map((r) => Number(r.finished_at))) - t0;
    log(`    ${atOnce} of ${runs} ran at once; all finished ${ms} ms after the first trigger`);
    return { runs, atOnce, ms };
  } finally {
    agent.destroy();
  }
}

/** One set-up: scratch resources, nodes, `body`, then everything stopped and removed. */
async function withSetup<T>(
  what: string,
  script: string,
  flags: string[],
  s: ClusterSettings,
  layout: Array<{ name: string; role: NestClusterConfig['role'] }>,
  bus: NestClusterConfig['bus'],
  log: Log,
  body: (nodes: Nodes, scratch: Scratch) => Promise<T>,
  stack: NestClusterConfig['stack'] = 'redis',
): Promise<T> {
  log(`▶ ${what}: starting ${layout.map((n) => n.name).join(', ')}`);
  const scratch = await createScratch(s);
  const started: Contender[] = [];
  try {
    const t0 = now();
    const nodes = await startNodes(script, flags, s, scratch, layout, bus, started, stack);
    log(`  ${nodes.all.length} process(es) ready in ${((now() - t0) / 1000).toFixed(1)} s`);
    const figures = await body(nodes, scratch);
    // Each node really ran as BENCH_CLUSTER_OTEL says (an API node only traces; every node has metrics).
    for (const c of nodes.all) checkTelemetry(s.otel, await c.call<TelemetryReport>('telemetry'));
    return figures;
  } finally {
    await Promise.all(started.map((c) => c.stop()));
    await scratch.remove().catch((e: unknown) => log(`  could not remove the scratch database / Redis keys: ${errorText(e)}`));
  }
}

/**
 * `flags` start every process; `nodePreload` is added for the module's nodes only (the OpenTelemetry
 * variant of `s.otel`, so the raw baselines stay the same whatever it is).
 */
export async function runCluster(
  s: ClusterSettings,
  script: string,
  rawScript: string,
  flags: string[],
  log: Log,
  nodePreload: string[] = [],
): Promise<ClusterResult> {
  const result: ClusterResult = { failures: {} };
  const nodeFlags = [...flags, ...nodePreload];
  hookSignals();
  try {
    result.services = await checkServices(s);
    log(
      `▶ several nodes: PostgreSQL ${result.services.postgres} at ${redact(s.postgresUrl)}, Redis ${result.services.redis} at ${redact(s.redisUrl)}`,
    );
  } catch (e) {
    const failure = errorText(e);
    log(`  FAILED: ${failure}`);
    result.failures = {
      oneThroughput: failure,
      clusterThroughput: failure,
      oneWake: failure,
      clusterWake: failure,
      oneSingle: failure,
      localThroughput: failure,
      localSingle: failure,
      rawPgRequest: failure,
      rawPgGroup: failure,
      rawRuns: failure,
    };
    return result;
  }
  result.rawPg = {};
  for (const commit of ['request', 'group'] as const) {
    try {
      result.rawPg[commit] = await measureRawPg(commit, rawScript, flags, s, log);
    } catch (e) {
      const failure = errorText(e);
      if (commit === 'request') result.failures.rawPgRequest = failure;
      else result.failures.rawPgGroup = failure;
      log(`  FAILED: ${failure}`);
    }
  }
  try {
    result.rawRuns = await measureRawRuns(rawScript, flags, s, log);
  } catch (e) {
    result.failures.rawRuns = errorText(e);
    log(`  FAILED: ${result.failures.rawRuns}`);
  }
  const one = [{ name: 'one-node', role: 'all' as const }];
  const cluster = [
    { name: 'api-1', role: 'api' as const },
    { name: 'api-2', role: 'api' as const },
    { name: 'worker-1', role: 'worker' as const },
    { name: 'worker-2', role: 'worker' as const },
  ];

  for (const stack of ['local', 'redis'] as const) {
    const [throughputKey, singleKey] =
      stack === 'local' ? (['localThroughput', 'localSingle'] as const) : (['oneThroughput', 'oneSingle'] as const);
    try {
      result[throughputKey] = await withSetup(
        stack === 'local'
          ? 'one node (role all), PostgreSQL only (in-process runner, limits and bus), throughput'
          : 'one node (role all), PostgreSQL + Redis, throughput',
        script,
        nodeFlags,
        s,
        one,
        stack === 'local' ? 'memory' : 'redis',
        log,
        async (nodes, scratch) => {
          const figures = await measureThroughput(nodes, scratch.pg, s, log);
          // The same node at 1 connection (beside the raw baselines' 1-connection figures).
          try {
            const target: LoadTarget = { port: nodes.http[0].port, trigger: nodes.triggers.echo };
            await settle(scratch.pg);
            if (s.warmupS > 0) await load(target, 1, s.warmupS);
            const r = await load(target, 1, s.durationS);
            const problem = loadProblem(r);
            if (problem) throw new Error(`1 connection: ${problem}`);
            log(`    1 conn: ${Math.round(r.rps)} req/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`);
            result[singleKey] = r;
          } catch (e) {
            result.failures[singleKey] = errorText(e);
            log(`  FAILED: ${result.failures[singleKey]}`);
          }
          return figures;
        },
        stack,
      );
    } catch (e) {
      result.failures[throughputKey] = errorText(e);
      result.failures[singleKey] ??= result.failures[throughputKey];
      log(`  FAILED: ${result.failures[throughputKey]}`);
    }
  }
  try {
    result.oneWake = await withSetup(
      'one node (role all), in-memory bus, wake-up',
      script,
      nodeFlags,
      s,
      one,
      'memory',
      log,
      async (nodes, scratch) => {
        log(`  wake-up: ${s.samples} runs of a ${s.botMs} ms bot, trigger and sync on the one node`);
        const w = await measureWake(nodes, nodes.http[0], nodes.http[0], scratch.pg, s);
        log(`    stored→answer p50 ${w.storedToAnswer.p50.toFixed(2)} ms, p99 ${w.storedToAnswer.p99.toFixed(2)} ms`);
        log(`    stored→stream done p50 ${w.storedToDone.p50.toFixed(2)} ms, p99 ${w.storedToDone.p99.toFixed(2)} ms`);
        log(`    stored→callback delivered p50 ${w.storedToCallback.p50.toFixed(2)} ms, p99 ${w.storedToCallback.p99.toFixed(2)} ms`);
        return w;
      },
    );
  } catch (e) {
    result.failures.oneWake = errorText(e);
    log(`  FAILED: ${result.failures.oneWake}`);
  }
  try {
    await withSetup('2 API nodes + 2 workers, PostgreSQL + Redis', script, nodeFlags, s, cluster, 'redis', log, async (nodes, scratch) => {
      try {
        result.clusterThroughput = await measureThroughput(nodes, scratch.pg, s, log);
      } catch (e) {
        result.failures.clusterThroughput = errorText(e);
        log(`  FAILED: ${result.failures.clusterThroughput}`);
        await drain(scratch.pg).catch(() => undefined);
      }
      try {
        log(`  wake-up: ${s.samples} runs of a ${s.botMs} ms bot, trigger on api-1, sync on api-2`);
        result.clusterWake = await measureWake(nodes, nodes.http[0], nodes.http[1], scratch.pg, s);
        log(
          `    stored→answer p50 ${result.clusterWake.storedToAnswer.p50.toFixed(2)} ms, p99 ${result.clusterWake.storedToAnswer.p99.toFixed(2)} ms`,
        );
        log(
          `    stored→stream done p50 ${result.clusterWake.storedToDone.p50.toFixed(2)} ms, p99 ${result.clusterWake.storedToDone.p99.toFixed(2)} ms`,
        );
        log(
          `    stored→callback delivered p50 ${result.clusterWake.storedToCallback.p50.toFixed(2)} ms, p99 ${result.clusterWake.storedToCallback.p99.toFixed(2)} ms`,
        );
      } catch (e) {
        result.failures.clusterWake = errorText(e);
        log(`  FAILED: ${result.failures.clusterWake}`);
      }
      try {
        result.capacity = await measureCapacity(nodes, scratch.pg, nodes.runners.length, log);
      } catch (e) {
        result.failures.capacity = errorText(e);
        log(`  FAILED: ${result.failures.capacity}`);
      }
    });
  } catch (e) {
    const failure = errorText(e);
    result.failures.clusterThroughput ??= failure;
    result.failures.clusterWake ??= failure;
    log(`  FAILED: ${failure}`);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------------

const MB = 1024 * 1024;

export function clusterRows(r: ClusterResult, s: ClusterSettings): Row[] {
  const rows: Row[] = [];
  const f = r.failures;
  const tpFailure = f.clusterThroughput ?? (f.oneThroughput ? `baseline failed: ${f.oneThroughput}` : undefined);
  const tp = `Throughput, several nodes: 2 API nodes (role api, ${s.adapter}) + 2 workers on PostgreSQL + Redis (BullMQ), ${s.connections} conn spread over both, ${s.durationS} s (baseline: one node, role all, same stack)`;
  const c = r.clusterThroughput;
  const o = r.oneThroughput;
  const base = (value: number | null | undefined) => ({ baseline: { label: 'one node', value: value ?? null } });
  rows.push({
    section: `Slow-bot capacity: one account, 2 workers × ${DEFAULT_SLOTS} slots (the default), ${CAPACITY_BOT_MS} ms bot, all triggered at once`,
    figure: 'runs executing at once',
    value: r.capacity?.atOnce ?? null,
    unit: 'runs',
    baseline: { label: 'workers × slots', value: r.capacity?.runs ?? null },
    target: { on: 'ratio', op: '>=', limit: 1, text: '= workers × slots' },
    failure: f.capacity ?? f.clusterThroughput,
  });
  rows.push({
    section: tp,
    figure: `req/s, ${s.connections} conn`,
    value: c?.load.rps ?? null,
    unit: 'req/s',
    ...base(o?.load.rps),
    failure: tpFailure,
  });
  rows.push({
    section: tp,
    figure: `p50, ${s.connections} conn`,
    value: c?.load.p50 ?? null,
    unit: 'ms',
    ...base(o?.load.p50),
    failure: tpFailure,
  });
  rows.push({
    section: tp,
    figure: `p99, ${s.connections} conn`,
    value: c?.load.p99 ?? null,
    unit: 'ms',
    ...base(o?.load.p99),
    failure: tpFailure,
  });
  rows.push({
    section: tp,
    figure: 'runs accepted during the window',
    value: c?.accepted ?? null,
    unit: 'runs',
    ...base(o?.accepted),
    failure: tpFailure,
  });
  rows.push({
    section: tp,
    figure: 'runs succeeded during the window',
    value: c?.succeeded ?? null,
    unit: 'runs',
    ...base(o?.succeeded),
    failure: tpFailure,
  });
  rows.push({
    section: tp,
    figure: 'runs succeeded per second during the window',
    value: c?.succeededPerSecond ?? null,
    unit: 'runs/s',
    ...base(o?.succeededPerSecond),
    failure: tpFailure,
  });
  rows.push({
    section: tp,
    figure: 'runs still pending after the window',
    value: c?.pending ?? null,
    unit: 'runs',
    ...base(o?.pending),
    failure: tpFailure,
  });
  rows.push({
    section: tp,
    figure: 'time to finish those runs',
    value: c?.drainMs ?? null,
    unit: 'ms',
    ...base(o?.drainMs),
    failure: tpFailure,
  });
  rows.push({
    section: tp,
    figure: 'peak RSS, all processes together',
    value: c ? c.peakRssSum / MB : null,
    unit: 'MB',
    ...base(o ? o.peakRssSum / MB : null),
    failure: tpFailure,
  });

  rows.push(...rawPgRows(r, s));

  const wkFailure = f.clusterWake ?? (f.oneWake ? `baseline failed: ${f.oneWake}` : undefined);
  const wk = `Wake-up across nodes: trigger on API 1, sync on API 2, run on a worker (bot sleeps ${s.botMs} ms), ${s.samples} runs one after another (baseline: one node, role all, in-memory bus)`;
  const w = r.clusterWake;
  const b = r.oneWake;
  const informative: Target = { on: 'value', op: '<=', limit: 50, text: '≤ 50 ms (informative)', informative: true };
  rows.push({
    section: wk,
    figure: 'run stored→sync answer p50',
    value: w?.storedToAnswer.p50 ?? null,
    unit: 'ms',
    ...base(b?.storedToAnswer.p50),
    failure: wkFailure,
  });
  rows.push({
    section: wk,
    figure: 'run stored→sync answer p99',
    value: w?.storedToAnswer.p99 ?? null,
    unit: 'ms',
    ...base(b?.storedToAnswer.p99),
    target: informative,
    failure: wkFailure,
  });
  rows.push({
    section: wk,
    figure: 'run stored→event stream done p50',
    value: w?.storedToDone.p50 ?? null,
    unit: 'ms',
    ...base(b?.storedToDone.p50),
    failure: wkFailure,
  });
  rows.push({
    section: wk,
    figure: 'run stored→event stream done p99',
    value: w?.storedToDone.p99 ?? null,
    unit: 'ms',
    ...base(b?.storedToDone.p99),
    failure: wkFailure,
  });
  rows.push({
    section: wk,
    figure: 'run stored→callback delivered p50 (loopback receiver)',
    value: w?.storedToCallback.p50 ?? null,
    unit: 'ms',
    ...base(b?.storedToCallback.p50),
    failure: wkFailure,
  });
  rows.push({
    section: wk,
    figure: 'run stored→callback delivered p99 (loopback receiver)',
    value: w?.storedToCallback.p99 ?? null,
    unit: 'ms',
    ...base(b?.storedToCallback.p99),
    failure: wkFailure,
  });
  rows.push({
    section: wk,
    figure: 'stored finished_at→sync answer p99 (as the scale-out test)',
    value: w?.finishedAtToAnswer.p99 ?? null,
    unit: 'ms',
    ...base(b?.finishedAtToAnswer.p99),
    failure: wkFailure,
  });
  rows.push({
    section: wk,
    figure: 'bot return→sync answer p50',
    value: w?.returnToAnswer.p50 ?? null,
    unit: 'ms',
    ...base(b?.returnToAnswer.p50),
    failure: wkFailure,
  });
  rows.push({
    section: wk,
    figure: 'bot return→sync answer p99',
    value: w?.returnToAnswer.p99 ?? null,
    unit: 'ms',
    ...base(b?.returnToAnswer.p99),
    failure: wkFailure,
  });
  rows.push({
    section: wk,
    figure: 'trigger sent→sync answer p50',
    value: w?.triggerToAnswer.p50 ?? null,
    unit: 'ms',
    ...base(b?.triggerToAnswer.p50),
    failure: wkFailure,
  });
  rows.push({
    section: wk,
    figure: 'trigger sent→sync answer p99',
    value: w?.triggerToAnswer.p99 ?? null,
    unit: 'ms',
    ...base(b?.triggerToAnswer.p99),
    failure: wkFailure,
  });
  rows.push({
    section: wk,
    figure: 'runs stored before their sync arrived (left out above)',
    value: w?.notWaiting ?? null,
    unit: 'count',
    ...base(b?.notWaiting),
    failure: wkFailure,
  });
  return rows;
}

/**
 * The library on one node (role all; on PostgreSQL alone, and with Redis) beside the raw PostgreSQL
 * baselines: req/s and p50/p99 at 1 and `connections` connections, each against raw group commit, and
 * at 1 connection p50 against raw per request (issue 13's targets: ≥ 0.5× / ≥ 0.3× raw group commit's
 * req/s at `connections`; p50 ≤ 2× raw per request's at 1 connection); runs finished ÷ runs accepted.
 */
function rawPgRows(r: ClusterResult, s: ClusterSettings): Row[] {
  const rows: Row[] = [];
  const f = r.failures;
  const section = `PostgreSQL accept step: the library on one node (role all, ${s.adapter}, echo) vs raw node:http + pg (trigger look-up, debit + INSERT in one transaction, 200 after COMMIT), ${s.durationS} s per load`;
  const figures = [
    ['req/s', 'req/s', (l: LoadResult) => l.rps],
    ['p50', 'ms', (l: LoadResult) => l.p50],
    ['p99', 'ms', (l: LoadResult) => l.p99],
  ] as const;
  for (const c of [1, s.connections]) {
    for (const [commit, label, failure] of [
      ['request', 'raw, transaction per request', f.rawPgRequest],
      ['group', 'raw, group commit', f.rawPgGroup],
    ] as const) {
      const raw = r.rawPg?.[commit]?.load[c];
      for (const [figure, unit, pick] of figures) {
        rows.push({ section, figure: `${label}: ${figure}, ${c} conn`, value: raw ? pick(raw) : null, unit, failure });
      }
    }
  }
  const variants = [
    ['PostgreSQL alone (in-process runner)', r.localThroughput, r.localSingle, f.localThroughput, f.localSingle, 0.5],
    ['PostgreSQL + Redis (BullMQ, Redis limits and bus)', r.oneThroughput, r.oneSingle, f.oneThroughput, f.oneSingle, 0.3],
  ] as const;
  for (const [name, throughput, single, throughputFailure, singleFailure, share] of variants) {
    for (const c of [1, s.connections]) {
      const l = c === 1 ? single : throughput?.load;
      const failure =
        (c === 1 ? singleFailure : throughputFailure) ?? (f.rawPgGroup ? `raw group commit failed: ${f.rawPgGroup}` : undefined);
      const group = r.rawPg?.group?.load[c];
      for (const [figure, unit, pick] of figures) {
        rows.push({
          section,
          figure: `library, one node, ${name}: ${figure}, ${c} conn`,
          value: l ? pick(l) : null,
          unit,
          baseline: { label: 'raw group commit', value: group ? pick(group) : null },
          ...(c === s.connections && figure === 'req/s'
            ? { target: { on: 'ratio' as const, op: '>=' as const, limit: share, text: `≥ ${share.toFixed(2)}× raw group commit` } }
            : {}),
          failure,
        });
      }
    }
    const perRequest = r.rawPg?.request?.load[1];
    rows.push({
      section,
      figure: `library, one node, ${name}: p50, 1 conn, against raw per request`,
      value: single ? single.p50 : null,
      unit: 'ms',
      baseline: { label: 'raw per request', value: perRequest ? perRequest.p50 : null },
      target: { on: 'ratio', op: '<=', limit: 2, text: '≤ 2× raw per request' },
      failure: singleFailure ?? (f.rawPgRequest ? `raw per request failed: ${f.rawPgRequest}` : undefined),
    });
    rows.push({
      section,
      figure: `library, one node, ${name}: runs finished per second in the ${s.connections}-conn window`,
      value: throughput ? throughput.succeededPerSecond : null,
      unit: 'runs/s',
      baseline: { label: 'runs accepted per second', value: throughput ? throughput.accepted / throughput.windowSeconds : null },
      target: { on: 'ratio', op: '>=', limit: 0.9, text: '≥ 0.90× accepted' },
      failure: throughputFailure,
    });
    rows.push({
      section,
      figure: `library, one node, ${name}: runs finished per second against the raw whole runs (${throughput ? throughput.load.refused : '?'} × 503 beside)`,
      value: throughput ? throughput.succeededPerSecond : null,
      unit: 'runs/s',
      baseline: { label: 'raw whole runs finished per second', value: r.rawRuns ? r.rawRuns.succeededPerSecond : null },
      target: { on: 'ratio', op: '>=', limit: share, text: `≥ ${share.toFixed(2)}× raw whole runs` },
      failure: throughputFailure ?? (f.rawRuns ? `raw whole runs failed: ${f.rawRuns}` : undefined),
    });
  }
  return rows;
}
