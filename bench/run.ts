// `npm run bench` (full) and `npm run bench:smoke` (short, targets not judged): starts every contender as
// its own process on 127.0.0.1, measures it, and prints one table plus bench/results.json.
// See bench/README.md for what each figure means.
import { Agent } from 'node:http';
import { writeFileSync } from 'node:fs';
import { arch, cpus, loadavg, platform, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { clusterRows, redact, runCluster, type ClusterResult, type ClusterSettings } from './harness/cluster.js';
import { Contender } from './harness/contender.js';
import { historyRows, runHistory, type HistoryPhase, type HistorySettings } from './harness/history.js';
import { httpCall, parseJson } from './harness/http.js';
import { load, loadProblem, quantile, triggerHeaders, triggerUrl, type LoadResult, type LoadTarget } from './harness/load.js';
import { renderTable, verdict, type Row, type Target } from './harness/report.js';
import { bestRound, checkTelemetry, OTEL_VARIANTS, otelKey, otelPreload, otelRows, type OtelVariant } from './harness/otel.js';
import { ourRound, rawRound, type WaitRound } from './harness/waiters.js';
import { repoRoot } from './lib.js';
import { now, TRIGGER_BODY, type MemoryReport, type SqliteSettings, type TelemetryReport } from './shared.js';

type Adapter = 'express' | 'fastify';

// ---------------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------------

const smoke = process.argv.includes('--smoke');

function num(name: string, full: number, smokeValue: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return smoke ? smokeValue : full;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a number ≥ 0, got ${JSON.stringify(raw)}`);
  return n;
}

function adapters(name: string, fallback: string): Adapter[] {
  const list = (process.env[name] || fallback)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const a of list) if (a !== 'express' && a !== 'fastify') throw new Error(`${name}: unknown adapter ${a}`);
  return list as Adapter[];
}

const settings = {
  mode: smoke ? 'smoke' : 'full',
  /** Seconds of each throughput measurement (per contender, per connection count). */
  durationS: num('BENCH_DURATION_S', 8, 1),
  /** Seconds of warm-up load (50 connections) before a contender is measured. */
  warmupS: num('BENCH_WARMUP_S', 2, 0.5),
  connections: [1, 50],
  /** Seconds of the end-to-end trigger→sync loop. */
  e2eS: num('BENCH_E2E_S', 4, 1),
  /** Sync waiters held at once in the memory / release test (≤ 10,000: the module's maxConcurrentRuns cap). */
  waiters: num('BENCH_WAITERS', 10_000, 500),
  /** Sync waiters in the completion→response delay test. */
  fewWaiters: num('BENCH_FEW_WAITERS', 100, 100),
  /** Seconds all waiters are held while the SQL statements are counted. */
  holdS: num('BENCH_HOLD_S', 2, 0.5),
  /** ms between runs in the one-by-one release variant. */
  staggerMs: num('BENCH_STAGGER_MS', 5, 5),
  waiterAdapters: adapters('BENCH_WAITER_ADAPTERS', 'fastify,express'),
  /** PRAGMA synchronous of the raw baseline's WAL database (the module runs SQLite's default, FULL). */
  rawSynchronous: (process.env.BENCH_RAW_SYNCHRONOUS || 'FULL').toUpperCase(),
  /** Run only some phases: `throughput`, `waiters`, `cluster`, `history`, `otel` (comma-separated); default all. */
  only: (process.env.BENCH_ONLY || 'throughput,waiters,cluster,history,otel').split(',').map((s) => s.trim()),
  /** The OpenTelemetry cost phase (`otel`): the trigger endpoint with no SDK, the SDK registered (with and without a context manager), and not installed. */
  otel: {
    adapters: adapters('BENCH_OTEL_ADAPTERS', smoke ? 'fastify' : 'fastify,express'),
    /** Rounds of the variants, interleaved; the best round of each is reported. */
    rounds: num('BENCH_OTEL_ROUNDS', 3, 1),
  },
  /** The several-node phase (`cluster`): PostgreSQL + Redis, each node its own process. */
  cluster: {
    postgresUrl: process.env.WEBHOOK_TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test',
    redisUrl: process.env.WEBHOOK_TEST_REDIS_URL || 'redis://127.0.0.1:6379',
    adapter: adapters('BENCH_CLUSTER_ADAPTER', 'fastify')[0],
    /** Connections of the throughput measurement in total (half per autocannon instance). */
    connections: num('BENCH_CLUSTER_CONNECTIONS', 50, 50),
    durationS: num('BENCH_DURATION_S', 8, 1),
    warmupS: num('BENCH_WARMUP_S', 2, 0.5),
    /** Sequential trigger→sync runs of the cross-node wake-up measurement. */
    samples: num('BENCH_CLUSTER_SAMPLES', 200, 30),
    /** How long the wake-up bot sleeps, so the sync request is already waiting when the run finishes. */
    botMs: num('BENCH_CLUSTER_BOT_MS', 20, 20),
    /** The module's nodes with the OpenTelemetry SDK registered (`sdk`, …) or not (`none`): the `otel` phase's variants. */
    otel: (process.env.BENCH_CLUSTER_OTEL || 'none') as OtelVariant,
  } satisfies ClusterSettings,
  /** History pages on a large table (phase `history`): SQLite, then PostgreSQL. */
  history: {
    rows: num('BENCH_HISTORY_ROWS', 1_000_000, 20_000),
    reps: num('BENCH_HISTORY_REPS', 50, 50),
    databases: ['sqlite', 'postgres'],
    postgresUrl: process.env.WEBHOOK_TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test',
  } satisfies HistorySettings,
  /** Exit 2 when a target is not met (a full run otherwise exits 0 and reports it). */
  strict: process.env.BENCH_STRICT === '1',
};
if (settings.waiters > 10_000 || settings.fewWaiters > 10_000) throw new Error('BENCH_WAITERS and BENCH_FEW_WAITERS must be ≤ 10000');
if (!['OFF', 'NORMAL', 'FULL', 'EXTRA'].includes(settings.rawSynchronous))
  throw new Error('BENCH_RAW_SYNCHRONOUS must be OFF, NORMAL, FULL or EXTRA');
for (const phase of settings.only)
  if (!['throughput', 'waiters', 'cluster', 'history', 'otel'].includes(phase))
    throw new Error(`BENCH_ONLY: unknown phase ${phase} (throughput, waiters, cluster, history, otel)`);
if (settings.otel.rounds < 1) throw new Error('BENCH_OTEL_ROUNDS must be ≥ 1');
if (!(settings.cluster.otel in OTEL_VARIANTS))
  throw new Error(`BENCH_CLUSTER_OTEL must be one of ${Object.keys(OTEL_VARIANTS).join(', ')}`);
if (settings.history.rows < 1000 || settings.history.reps < 1)
  throw new Error('BENCH_HISTORY_ROWS must be ≥ 1000 and BENCH_HISTORY_REPS ≥ 1');
if (settings.cluster.samples < 1 || settings.cluster.connections < 2)
  throw new Error('BENCH_CLUSTER_SAMPLES must be ≥ 1 and BENCH_CLUSTER_CONNECTIONS ≥ 2');

const script = (name: string) => join(__dirname, 'contenders', `${name}.js`);
/** BENCH_CPU_PROF=<dir>: every contender writes a V8 CPU profile there when it exits (for finding hot spots). */
const contenderFlags = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
const log = (message: string) => process.stderr.write(`${message}\n`);
const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));
const failures: string[] = [];

// ---------------------------------------------------------------------------------------------------
// Throughput contenders
// ---------------------------------------------------------------------------------------------------

interface ThroughputSpec {
  key: string;
  label: string;
  script: string;
  config: unknown;
  /** Our endpoint: runs happen in the background and must be drained between measurements. */
  ours: boolean;
  /** Runs happen in the background (ours, or the raw whole-runs baseline): drained, and counted as finished. */
  runs?: boolean;
  /** The OpenTelemetry phase: which variant the contender runs (a preload sets it), checked after the measurement. */
  otel?: OtelVariant;
}

interface ThroughputResult {
  spec: ThroughputSpec;
  load: Record<number, LoadResult>;
  peakRss?: number;
  sqlite?: SqliteSettings;
  /**
   * Ours: runs still queued or running when the 50-connection measurement ended, ms to finish them,
   * and runs finished per second during that measurement (it started with none pending).
   */
  backlog?: { pending: number; drainMs: number; finishedPerSecond: number };
  /** Ours: trigger→sync of `echo`, one connection. */
  e2e?: { p50: number; p99: number; n: number };
  /** The OpenTelemetry phase: what the contender loaded and, with the SDK, what it exported. */
  telemetry?: TelemetryReport;
  failure?: string;
}

const THROUGHPUT: ThroughputSpec[] = [
  {
    key: 'raw',
    label: 'raw node:http + SQLite, one commit per request',
    script: 'raw-trigger',
    config: { synchronous: settings.rawSynchronous, commit: 'request' },
    ours: false,
  },
  {
    key: 'raw-grouped',
    label: 'raw node:http + SQLite, one commit per event-loop tick',
    script: 'raw-trigger',
    config: { synchronous: settings.rawSynchronous, commit: 'tick' },
    ours: false,
  },
  {
    key: 'raw-runs',
    label: 'raw node:http + SQLite, whole runs (accept, claim, finish; each stage one commit per tick)',
    script: 'raw-trigger',
    config: { synchronous: settings.rawSynchronous, commit: 'tick', runs: true },
    ours: false,
    runs: true,
  },
  { key: 'bare-express', label: 'bare Nest route, Express', script: 'nest-bare', config: { adapter: 'express' }, ours: false },
  { key: 'bare-fastify', label: 'bare Nest route, Fastify', script: 'nest-bare', config: { adapter: 'fastify' }, ours: false },
  {
    key: 'trigger-express',
    label: 'trigger endpoint, Express',
    script: 'nest-trigger',
    config: { adapter: 'express', waiters: false },
    ours: true,
  },
  {
    key: 'trigger-fastify',
    label: 'trigger endpoint, Fastify',
    script: 'nest-trigger',
    config: { adapter: 'fastify', waiters: false },
    ours: true,
  },
];

const DRAIN_TIMEOUT_MS = 180_000;

/** One request, checked: the contender must answer what the endpoint promises before it is timed. */
async function sanityCheck(target: LoadTarget, ours: boolean): Promise<void> {
  const agent = new Agent({ keepAlive: false });
  try {
    const a = await httpCall(agent, { method: 'POST', url: triggerUrl(target), headers: triggerHeaders(target), body: TRIGGER_BODY });
    const body = parseJson(a);
    if (a.status !== 200 || body?.success !== true || typeof body?.invocation?.id !== 'string') {
      throw new Error(`sanity check: expected 200 {success:true, invocation:{id}}, got HTTP ${a.status}: ${a.text.slice(0, 200)}`);
    }
    if (ours) {
      const s = await httpCall(agent, {
        url: `${triggerUrl(target)}/invocation/${body.invocation.id}/sync`,
        headers: { 'x-key': target.trigger.key },
      });
      const sync = parseJson(s);
      if (s.status !== 200 || sync?.success !== true || sync?.outputs?.[0]?.message !== 'hello') {
        throw new Error(
          `sanity check: sync expected 200 {success:true, outputs:[{title:"text",message:"hello"}]}, got HTTP ${s.status}: ${s.text.slice(0, 200)}`,
        );
      }
    }
  } finally {
    agent.destroy();
  }
}

async function measured(target: LoadTarget, connections: number, seconds: number, what: string): Promise<LoadResult> {
  const r = await load(target, connections, seconds);
  const problem = loadProblem(r);
  if (problem) throw new Error(`${what}: ${problem}`);
  return r;
}

/** Trigger→sync for `echo`, one keep-alive connection, back to back for `seconds`. */
async function endToEnd(target: LoadTarget, seconds: number): Promise<{ p50: number; p99: number; n: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  try {
    const once = async () => {
      const t0 = now();
      const a = await httpCall(agent, { method: 'POST', url: triggerUrl(target), headers: triggerHeaders(target), body: TRIGGER_BODY });
      const id = parseJson(a)?.invocation?.id;
      if (a.status !== 200 || typeof id !== 'string')
        throw new Error(`end-to-end: trigger answered HTTP ${a.status}: ${a.text.slice(0, 200)}`);
      const s = await httpCall(agent, { url: `${triggerUrl(target)}/invocation/${id}/sync`, headers: { 'x-key': target.trigger.key } });
      if (s.status !== 200 || parseJson(s)?.success !== true)
        throw new Error(`end-to-end: sync answered HTTP ${s.status}: ${s.text.slice(0, 200)}`);
      return s.at - t0;
    };
    for (let i = 0; i < 20; i++) await once(); // warm the path and the connection
    const end = now() + seconds * 1000;
    while (now() < end) latencies.push(await once());
  } finally {
    agent.destroy();
  }
  return { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), n: latencies.length };
}

async function runThroughput(spec: ThroughputSpec): Promise<ThroughputResult> {
  const result: ThroughputResult = { spec, load: {} };
  let c: Contender | undefined;
  const withRuns = spec.ours || spec.runs === true;
  const drain = async () => {
    if (withRuns)
      return c!.call<{ ms: number; pendingAtStart: number }>('drain', { timeoutMs: DRAIN_TIMEOUT_MS }, DRAIN_TIMEOUT_MS + 5_000);
  };
  try {
    log(`▶ ${spec.label}: starting`);
    const preload = spec.otel ? otelPreload(spec.otel, join(__dirname, 'contenders'), repoRoot()) : [];
    c = await Contender.start(spec.key, script(spec.script), spec.config, [...contenderFlags, ...preload]);
    result.sqlite = c.ready.sqlite;
    const target: LoadTarget = { port: c.port, trigger: c.ready.triggers!.echo };
    await sanityCheck(target, spec.ours);
    if (settings.warmupS > 0) {
      log(`  warm-up: 50 connections, ${settings.warmupS} s`);
      await measured(target, 50, settings.warmupS, 'warm-up');
    }
    for (const connections of settings.connections) {
      const drained = await drain();
      if (drained && drained.pendingAtStart)
        log(`  drained ${drained.pendingAtStart} background runs in ${(drained.ms / 1000).toFixed(1)} s`);
      log(`  measure: ${connections} connection(s), ${settings.durationS} s`);
      const r = await measured(target, connections, settings.durationS, `${connections} connection(s)`);
      c.assertAlive();
      result.load[connections] = r;
      log(`    ${Math.round(r.rps)} req/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`);
    }
    if (withRuns) {
      const pending = await c.call<number>('pending');
      const drained = await drain();
      const last = result.load[settings.connections[settings.connections.length - 1]];
      result.backlog = { pending, drainMs: drained!.ms, finishedPerSecond: Math.max(0, last.ok - pending) / last.seconds };
      log(`  ${pending} background runs were pending at the end; drained in ${(drained!.ms / 1000).toFixed(1)} s`);
    }
    result.peakRss = (await c.call<MemoryReport>('memory')).peakRss;
    if (spec.ours) {
      log(`  end-to-end trigger→sync: 1 connection, ${settings.e2eS} s`);
      result.e2e = await endToEnd(target, settings.e2eS);
    }
    if (spec.otel) {
      result.telemetry = await c.call<TelemetryReport>('telemetry');
      checkTelemetry(spec.otel, result.telemetry);
    }
  } catch (e) {
    result.failure = errorText(e);
    failures.push(`${spec.label}: ${result.failure}`);
    log(`  FAILED: ${result.failure}`);
  } finally {
    await c?.stop();
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------
// Waiters
// ---------------------------------------------------------------------------------------------------

interface WaitersResult {
  few?: WaitRound;
  /** Ours only: the same waiters, runs released one by one. */
  fewOneByOne?: WaitRound;
  many?: WaitRound;
  failure?: string;
}

async function runRawWaiters(): Promise<WaitersResult> {
  const result: WaitersResult = {};
  let c: Contender | undefined;
  try {
    log(`▶ raw long-poll baseline: ${settings.fewWaiters} then ${settings.waiters} waiters`);
    c = await Contender.start('raw-longpoll', script('raw-longpoll'), {}, contenderFlags);
    const offset = await c.clockOffset();
    result.few = await rawRound(c, offset, settings.fewWaiters, 'few', false);
    result.many = await rawRound(c, offset, settings.waiters, 'many', true);
    log(`  release→last ${result.many.releaseToLast.toFixed(1)} ms, ${(result.many.rssPerWaiterBytes! / 1024).toFixed(2)} KB per waiter`);
  } catch (e) {
    result.failure = errorText(e);
    failures.push(`raw long-poll baseline: ${result.failure}`);
    log(`  FAILED: ${result.failure}`);
  } finally {
    await c?.stop();
  }
  return result;
}

async function runOurWaiters(adapter: Adapter): Promise<WaitersResult> {
  const result: WaitersResult = {};
  let c: Contender | undefined;
  try {
    log(`▶ sync waiters, ${adapter}: ${settings.fewWaiters} (at once, then one by one) then ${settings.waiters}`);
    const maxConcurrentRuns = Math.max(settings.waiters, settings.fewWaiters);
    c = await Contender.start(`waiters-${adapter}`, script('nest-trigger'), { adapter, waiters: true, maxConcurrentRuns }, contenderFlags);
    const offset = await c.clockOffset();
    const trigger = c.ready.triggers!.release;
    result.few = await ourRound(c, offset, trigger, { n: settings.fewWaiters, release: 'all', measureMemory: false, holdMs: 200 });
    log(`  ${settings.fewWaiters} at once: completion→answer p99 ${result.few.completionToAnswer!.p99.toFixed(2)} ms`);
    result.fewOneByOne = await ourRound(c, offset, trigger, {
      n: settings.fewWaiters,
      release: settings.staggerMs,
      measureMemory: false,
      holdMs: 200,
    });
    log(`  ${settings.fewWaiters} one by one: completion→answer p99 ${result.fewOneByOne.completionToAnswer!.p99.toFixed(2)} ms`);
    result.many = await ourRound(c, offset, trigger, {
      n: settings.waiters,
      release: 'all',
      measureMemory: true,
      holdMs: settings.holdS * 1000,
    });
    log(
      `  ${settings.waiters}: runs triggered in ${(result.many.triggerSetupMs! / 1000).toFixed(1)} s; ` +
        `release→last ${result.many.releaseToLast.toFixed(1)} ms, ${(result.many.rssPerWaiterBytes! / 1024).toFixed(2)} KB per waiter, ` +
        `${result.many.statementsWhileHeld} statements while held`,
    );
  } catch (e) {
    result.failure = errorText(e);
    failures.push(`sync waiters (${adapter}): ${result.failure}`);
    log(`  FAILED: ${result.failure}`);
  } finally {
    await c?.stop();
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------
// Figures
// ---------------------------------------------------------------------------------------------------

const MB = 1024 * 1024;

function buildRows(tp: Record<string, ThroughputResult>, rawWait: WaitersResult, ourWait: Record<string, WaitersResult>): Row[] {
  const rows: Row[] = [];
  const D = settings.durationS;
  const loadOf = (key: string, c: number): LoadResult | null => tp[key]?.load[c] ?? null;
  const fail = (key: string) => tp[key]?.failure;
  const ge = (limit: number, of: string): Target => ({ on: 'ratio', op: '>=', limit, text: `≥ ${limit.toFixed(2)}× ${of}` });
  const le = (limit: number, of: string): Target => ({ on: 'ratio', op: '<=', limit, text: `≤ ${limit}× ${of}` });
  const leAbs = (limit: number, unit: string): Target => ({ on: 'value', op: '<=', limit, text: `≤ ${limit} ${unit}` });

  // Baselines are named in the table by these labels. "raw grouped" (one COMMIT per event-loop tick, like
  // the module) is the stick the raw-relative targets are judged against; "raw per-request" (one COMMIT
  // and fsync per request) is shown beside it for information only.
  const labelOf: Record<string, string> = {
    raw: 'raw per-request',
    'raw-grouped': 'raw grouped',
    'raw-runs': 'raw whole runs',
    'bare-express': 'bare Express',
    'bare-fastify': 'bare Fastify',
  };
  const baselineFor: Record<string, { rps?: string; latency?: string; rss?: string }> = {
    raw: {},
    'raw-grouped': { rps: 'raw', latency: 'raw', rss: 'raw' },
    'raw-runs': { rps: 'raw-grouped', latency: 'raw-grouped', rss: 'raw-grouped' },
    'bare-express': { rps: 'raw-grouped', latency: 'raw-grouped', rss: 'raw-grouped' },
    'bare-fastify': { rps: 'raw-grouped', latency: 'raw-grouped', rss: 'raw-grouped' },
    'trigger-express': { rps: 'bare-express', latency: 'raw-grouped', rss: 'bare-express' },
    'trigger-fastify': { rps: 'raw-grouped', latency: 'raw-grouped', rss: 'bare-fastify' },
  };
  for (const spec of THROUGHPUT) {
    const section = `Throughput: ${spec.label} (POST ${TRIGGER_BODY}, ${D} s each)`;
    const b = baselineFor[spec.key];
    for (const c of settings.connections) {
      const r = loadOf(spec.key, c);
      const baseRow = (key: string | undefined, pick: (x: LoadResult) => number) =>
        key ? { baseline: { label: labelOf[key], value: loadOf(key, c) ? pick(loadOf(key, c)!) : null } } : {};
      const at50 = c === 50;
      let rpsTarget: Target | undefined;
      if (at50 && spec.key === 'trigger-fastify') rpsTarget = ge(0.5, 'raw grouped');
      if (at50 && spec.key === 'trigger-express') rpsTarget = ge(0.5, 'bare Express');
      const p99Target = at50 && spec.ours ? le(3, 'raw grouped p99') : undefined;
      rows.push({
        section,
        figure: `req/s, ${c} conn`,
        value: r?.rps ?? null,
        unit: 'req/s',
        ...baseRow(b.rps, (x) => x.rps),
        target: rpsTarget,
        failure: fail(spec.key),
      });
      rows.push({
        section,
        figure: `p50, ${c} conn`,
        value: r?.p50 ?? null,
        unit: 'ms',
        ...baseRow(b.latency, (x) => x.p50),
        failure: fail(spec.key),
      });
      rows.push({
        section,
        figure: `p99, ${c} conn`,
        value: r?.p99 ?? null,
        unit: 'ms',
        ...baseRow(b.latency, (x) => x.p99),
        target: p99Target,
        failure: fail(spec.key),
      });
      if (at50 && spec.ours) {
        // The same figures against the raw baselines the target rows above do not use (information, no target).
        const others = ['raw-grouped', 'raw'].filter((k) => k !== b.rps);
        for (const k of others) {
          rows.push({
            section,
            figure: `req/s, ${c} conn (vs ${labelOf[k]})`,
            value: r?.rps ?? null,
            unit: 'req/s',
            ...baseRow(k, (x) => x.rps),
            failure: fail(spec.key),
          });
        }
        rows.push({
          section,
          figure: `p99, ${c} conn (vs ${labelOf.raw})`,
          value: r?.p99 ?? null,
          unit: 'ms',
          ...baseRow('raw', (x) => x.p99),
          failure: fail(spec.key),
        });
      }
    }
    const peak = tp[spec.key]?.peakRss;
    const basePeak = b.rss ? tp[b.rss]?.peakRss : undefined;
    rows.push({
      section,
      figure: 'peak RSS',
      value: peak !== undefined ? peak / MB : null,
      unit: 'MB',
      ...(b.rss ? { baseline: { label: labelOf[b.rss], value: basePeak !== undefined ? basePeak / MB : null } } : {}),
      failure: fail(spec.key),
    });
    if (spec.runs && !spec.ours) {
      rows.push({
        section,
        figure: 'runs finished per second during the 50-conn run',
        value: tp[spec.key]?.backlog?.finishedPerSecond ?? null,
        unit: 'runs/s',
        baseline: { label: 'runs accepted per second', value: loadOf(spec.key, 50)?.rps ?? null },
        failure: fail(spec.key),
      });
    }
    if (spec.ours) {
      const t = tp[spec.key];
      rows.push({
        section,
        figure: 'runs finished per second during the 50-conn run',
        value: t?.backlog?.finishedPerSecond ?? null,
        unit: 'runs/s',
        // Runs accepted per second: every 2xx answer is a run stored and charged.
        baseline: { label: 'runs accepted per second', value: loadOf(spec.key, 50)?.rps ?? null },
        target: { on: 'ratio', op: '>=', limit: 0.9, text: '≥ 0.90× accepted' },
        failure: fail(spec.key),
      });
      rows.push({
        section,
        figure: 'runs finished per second against the raw whole runs (informative)',
        value: t?.backlog?.finishedPerSecond ?? null,
        unit: 'runs/s',
        baseline: { label: 'raw whole runs finished per second', value: tp['raw-runs']?.backlog?.finishedPerSecond ?? null },
        target: { on: 'ratio', op: '>=', limit: 0.5, text: '≥ 0.50× raw whole runs', informative: true },
        failure: fail(spec.key) ?? fail('raw-runs'),
      });
      rows.push({
        section,
        figure: 'runs still pending after the 50-conn run',
        value: t?.backlog?.pending ?? null,
        unit: 'runs',
        failure: fail(spec.key),
      });
      rows.push({ section, figure: 'time to finish those runs', value: t?.backlog?.drainMs ?? null, unit: 'ms', failure: fail(spec.key) });
    }
  }

  const wakeSection = `Wake-up: trigger→sync of echo, 1 connection, ${settings.e2eS} s`;
  for (const key of ['trigger-express', 'trigger-fastify'] as const) {
    const adapter = key.split('-')[1];
    const e2e = tp[key]?.e2e;
    rows.push({
      section: wakeSection,
      figure: `${adapter}: p50`,
      value: e2e?.p50 ?? null,
      unit: 'ms',
      target: leAbs(5, 'ms'),
      failure: fail(key),
    });
    rows.push({ section: wakeSection, figure: `${adapter}: p99`, value: e2e?.p99 ?? null, unit: 'ms', failure: fail(key) });
  }

  const F = settings.fewWaiters;
  const N = settings.waiters;
  for (const adapter of settings.waiterAdapters) {
    const w = ourWait[adapter] ?? {};
    const failure = w.failure;
    const few = `Wake-up: ${F} sync waiters in one process, ${adapter} (baseline: raw long-poll)`;
    const rawFew = rawWait.few?.releaseToAnswer;
    rows.push({
      section: few,
      figure: 'all runs finish at once: completion→answer p50',
      value: w.few?.completionToAnswer?.p50 ?? null,
      unit: 'ms',
      baseline: { label: 'raw', value: rawFew?.p50 ?? null },
      failure,
    });
    rows.push({
      section: few,
      figure: 'all runs finish at once: completion→answer p99',
      value: w.few?.completionToAnswer?.p99 ?? null,
      unit: 'ms',
      baseline: { label: 'raw', value: rawFew?.p99 ?? null },
      target: leAbs(5, 'ms'),
      failure,
    });
    rows.push({
      section: few,
      figure: 'all runs finish at once: bot return→answer p99',
      value: w.few?.returnToAnswer?.p99 ?? null,
      unit: 'ms',
      failure,
    });
    rows.push({
      section: few,
      figure: `one by one (${settings.staggerMs} ms apart): completion→answer p50`,
      value: w.fewOneByOne?.completionToAnswer?.p50 ?? null,
      unit: 'ms',
      failure,
    });
    rows.push({
      section: few,
      figure: `one by one (${settings.staggerMs} ms apart): completion→answer p99`,
      value: w.fewOneByOne?.completionToAnswer?.p99 ?? null,
      unit: 'ms',
      failure,
    });

    const many = `Waiting: ${N.toLocaleString('en-US')} sync waiters in one process, ${adapter} (baseline: raw long-poll)`;
    const rawMany = rawWait.many;
    const rawFailure = rawWait.failure ? `baseline failed: ${rawWait.failure}` : undefined;
    rows.push({
      section: many,
      figure: 'RSS per waiter',
      value: w.many?.rssPerWaiterBytes !== undefined ? w.many.rssPerWaiterBytes / 1024 : null,
      unit: 'KB',
      baseline: { label: 'raw', value: rawMany?.rssPerWaiterBytes !== undefined ? rawMany.rssPerWaiterBytes / 1024 : null },
      target: le(2, 'raw'),
      failure: failure ?? rawFailure,
    });
    rows.push({
      section: many,
      figure: 'release of all runs→last answer',
      value: w.many?.releaseToLast ?? null,
      unit: 'ms',
      baseline: { label: 'raw', value: rawMany?.releaseToLast ?? null },
      target: le(2, 'raw'),
      failure: failure ?? rawFailure,
    });
    rows.push({
      section: many,
      figure: '  of which: release→last run stored',
      value: w.many?.releaseToLastStored ?? null,
      unit: 'ms',
      failure,
    });
    rows.push({
      section: many,
      figure: '  of which: last run stored→last answer',
      value: w.many?.lastStoredToLast ?? null,
      unit: 'ms',
      failure,
    });
    rows.push({
      section: many,
      figure: `SQL statements while all wait (${((w.many?.heldMs ?? settings.holdS * 1000) / 1000).toFixed(1)} s)`,
      value: w.many?.statementsWhileHeld ?? null,
      unit: 'count',
      target: { on: 'value', op: '==', limit: 0, text: '= 0' },
      failure,
    });
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = now();
  const machine = {
    cpu: cpus()[0]?.model ?? 'unknown',
    nproc: cpus().length,
    memoryGB: +(totalmem() / 1024 ** 3).toFixed(1),
    os: `${platform()} ${release()} ${arch()}`,
    node: process.version,
    loadAverageAtStart: loadavg().map((x) => +x.toFixed(2)),
    date: new Date().toISOString(),
  };
  log(
    `nestjs-webhook-triggers bench (${settings.mode}) — ${machine.cpu}, ${machine.nproc} CPUs, Node ${machine.node}, load ${machine.loadAverageAtStart.join(' ')}`,
  );

  const tp: Record<string, ThroughputResult> = {};
  const runThroughputPhase = settings.only.includes('throughput');
  const runWaitersPhase = settings.only.includes('waiters');
  if (runThroughputPhase) for (const spec of THROUGHPUT) tp[spec.key] = await runThroughput(spec);
  const rawWait = runWaitersPhase ? await runRawWaiters() : {};
  const ourWait: Record<string, WaitersResult> = {};
  if (runWaitersPhase) for (const adapter of settings.waiterAdapters) ourWait[adapter] = await runOurWaiters(adapter);
  let cluster: ClusterResult | undefined;
  if (settings.only.includes('cluster')) {
    const nodePreload = otelPreload(settings.cluster.otel, join(__dirname, 'contenders'), repoRoot());
    cluster = await runCluster(settings.cluster, script('nest-cluster'), script('raw-pg-trigger'), contenderFlags, log, nodePreload);
    const named: Record<keyof ClusterResult['failures'], string> = {
      oneThroughput: 'several nodes: one-node throughput baseline',
      clusterThroughput: 'several nodes: 2 API + 2 workers throughput',
      oneWake: 'several nodes: one-node wake-up baseline',
      clusterWake: 'several nodes: cross-node wake-up',
      oneSingle: 'several nodes: one node at 1 connection',
      localThroughput: 'one node on PostgreSQL alone (in-process runner), throughput',
      localSingle: 'one node on PostgreSQL alone (in-process runner) at 1 connection',
      rawPgRequest: 'raw PostgreSQL baseline, transaction per request',
      rawPgGroup: 'raw PostgreSQL baseline, group commit',
      rawRuns: 'raw PostgreSQL baseline, whole runs',
      capacity: 'slow-bot capacity of 2 workers',
    };
    // One line per distinct cause (an unreachable service fails all four the same way).
    const byCause = new Map<string, string[]>();
    for (const [key, failure] of Object.entries(cluster.failures))
      if (failure) byCause.set(failure, [...(byCause.get(failure) ?? []), named[key as keyof typeof named]]);
    for (const [failure, what] of byCause)
      failures.push(`${what.length === Object.keys(named).length ? 'several nodes' : what.join(', ')}: ${failure}`);
  }
  const otel: Record<string, ThroughputResult> = {};
  if (settings.only.includes('otel')) {
    const rounds: Record<string, ThroughputResult[]> = {};
    for (let round = 1; round <= settings.otel.rounds; round++)
      for (const adapter of settings.otel.adapters)
        for (const variant of smoke ? (['none', 'sdk', 'absent'] as const) : (['none', 'sdk', 'absent', 'sdk-no-context'] as const)) {
          const key = otelKey(adapter, variant);
          const spec: ThroughputSpec = {
            key,
            label: `trigger endpoint, ${adapter}, ${OTEL_VARIANTS[variant].label}${settings.otel.rounds > 1 ? `, round ${round}` : ''}`,
            script: 'nest-trigger',
            config: { adapter, waiters: false },
            ours: true,
            otel: variant,
          };
          (rounds[key] ??= []).push(await runThroughput(spec));
        }
    for (const [key, all] of Object.entries(rounds)) otel[key] = bestRound(all) as ThroughputResult;
  }
  let history: HistoryPhase | undefined;
  if (settings.only.includes('history')) {
    history = await runHistory(settings.history, script('history'), contenderFlags, log);
    for (const [database, failure] of Object.entries(history.failures)) failures.push(`history pages on ${database}: ${failure}`);
  }

  const rows = [
    ...buildRows(tp, rawWait, ourWait).filter((r) =>
      r.section.startsWith('Throughput') || r.section.startsWith('Wake-up: trigger→sync') ? runThroughputPhase : runWaitersPhase,
    ),
    ...(cluster ? clusterRows(cluster, settings.cluster) : []),
    ...(history ? historyRows(history, settings.history) : []),
    ...(settings.only.includes('otel')
      ? otelRows(otel, { ...settings.otel, durationS: settings.durationS, e2eS: settings.e2eS, connections: settings.connections })
      : []),
  ];
  const judge = !smoke;
  const wallS = (now() - started) / 1000;

  const notes: string[] = [];
  const sqliteText = (s: SqliteSettings | undefined) => (s ? `${s.journalMode}/synchronous=${s.synchronous}` : '?');
  const rawSqlite = tp.raw?.sqlite;
  const groupedSqlite = tp['raw-grouped']?.sqlite;
  const ourSqlite = tp['trigger-fastify']?.sqlite ?? tp['trigger-express']?.sqlite;
  for (const [name, s] of [
    ['raw per-request', rawSqlite],
    ['raw grouped', groupedSqlite],
  ] as const) {
    if (s && ourSqlite && (s.synchronous !== ourSqlite.synchronous || s.journalMode !== ourSqlite.journalMode)) {
      notes.push(
        `NOTE: SQLite durability differs: ${name} ${sqliteText(s)}, module ${sqliteText(ourSqlite)}; ` +
          `set BENCH_RAW_SYNCHRONOUS=${ourSqlite.synchronous} for a like-for-like ratio.`,
      );
    }
  }

  const out: string[] = [];
  out.push('');
  out.push(`nestjs-webhook-triggers bench — ${settings.mode}${judge ? '' : ' (targets not judged)'}`);
  out.push(
    `${machine.cpu} × ${machine.nproc}, ${machine.os}, Node ${machine.node}, load average at start ${machine.loadAverageAtStart.join(' ')}, ${machine.date}`,
  );
  if (runThroughputPhase) {
    out.push(
      `SQLite: raw per-request ${sqliteText(rawSqlite)} (one COMMIT per request), raw grouped ${sqliteText(groupedSqlite)} (one COMMIT per event-loop tick), ` +
        `module ${sqliteText(ourSqlite)} (group commit per tick)`,
    );
  }
  out.push(
    'Load by autocannon in the orchestrator process; ratio = value / baseline; raw-relative targets are judged against "raw grouped".',
  );
  if (cluster?.services) {
    out.push(
      `Several nodes: PostgreSQL ${cluster.services.postgres}, Redis ${cluster.services.redis} on this machine; every node its own process, ` +
        `a scratch database and Redis key prefix per set-up (removed afterwards); targets marked "informative" are the bench's own, not the issue's.`,
    );
    if (settings.cluster.otel !== 'none')
      out.push(
        `Several nodes: the module's nodes run with ${OTEL_VARIANTS[settings.cluster.otel].label} (BENCH_CLUSTER_OTEL); the raw baselines do not.`,
      );
  }
  out.push(...notes);
  out.push('');
  out.push(renderTable(rows, judge));
  out.push('');
  const verdicts = rows.map((r) => verdict(r, judge));
  const targets = rows.filter((r) => r.target && !r.target.informative).length;
  const informative = rows.filter((r) => r.target?.informative).length;
  const met = verdicts.filter((v) => v === 'met').length;
  const notMet = verdicts.filter((v) => v === 'NOT MET').length;
  const infoMet = verdicts.filter((v) => v === 'met (informative)').length;
  const infoNotMet = verdicts.filter((v) => v === 'not met (informative)').length;
  const infoText = informative ? ` Informative: ${infoMet} met, ${infoNotMet} not met, of ${informative}.` : '';
  out.push(
    judge ? `Targets: ${met} met, ${notMet} not met, of ${targets}.${infoText}` : `Smoke run: ${targets + informative} targets not judged.`,
  );
  if (failures.length) out.push(`FAILED (${failures.length}):`, ...failures.map((f) => `  - ${f}`));
  out.push(`Wall time: ${wallS.toFixed(0)} s. Raw figures: bench/results.json`);
  process.stdout.write(out.join('\n') + '\n');

  const file = join(repoRoot(), 'bench', 'results.json');
  writeFileSync(
    file,
    JSON.stringify(
      {
        machine,
        settings: {
          ...settings,
          cluster: { ...settings.cluster, postgresUrl: redact(settings.cluster.postgresUrl), redisUrl: redact(settings.cluster.redisUrl) },
          history: { ...settings.history, postgresUrl: redact(settings.history.postgresUrl) },
        },
        wallSeconds: +wallS.toFixed(1),
        failures,
        figures: rows.map((r) => ({
          ...r,
          ratio: r.baseline && r.value !== null && r.baseline.value ? r.value / r.baseline.value : null,
          result: verdict(r, judge),
        })),
        throughput: Object.fromEntries(Object.entries(tp).map(([k, v]) => [k, { ...v, spec: undefined, label: v.spec.label }])),
        waiters: { raw: rawWait, ...ourWait },
        ...(cluster ? { cluster } : {}),
        ...(history ? { history } : {}),
        ...(settings.only.includes('otel')
          ? { otel: Object.fromEntries(Object.entries(otel).map(([k, v]) => [k, { ...v, spec: undefined, label: v.spec.label }])) }
          : {}),
      },
      null,
      2,
    ) + '\n',
  );

  if (failures.length) process.exit(1);
  if (settings.strict && judge && notMet) process.exit(2);
  process.exit(0);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
