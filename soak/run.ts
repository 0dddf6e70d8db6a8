// `npm run soak` (docs/soak.md): two API nodes and two workers of node.ts on a scratch PostgreSQL database
// and a Redis server of the soak's own, a mixed load for SOAK_DURATION_S seconds (default 600) while faults
// are injected on a seeded schedule (SOAK_SEED), then a recovery phase and the invariants, each printed with
// its count. Exits 1 on any violation (2 when the soak itself could not run).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import {
  checkAnswers,
  checkBodies,
  checkCallbacks,
  checkCredits,
  checkFinishedOnce,
  checkRateLimits,
  checkTerminal,
  type Delivered,
  fmt,
  readEffects,
  readRows,
  type Verdict,
} from './checks.js';
import { createScratchDatabase, freePort, NodeSlot, RedisServer, sleep } from './fleet.js';
import { lib } from './lib.js';
import { Load, Recorder, seededRandom } from './load.js';
import { SOAK_TIMINGS, type SeededTrigger, type SeedResult } from './shared.js';

const wholeEnv = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new Error(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  return Number(raw);
};

const DURATION_S = wholeEnv('SOAK_DURATION_S', 600);
const SEED = wholeEnv('SOAK_SEED', Date.now() % 1_000_000);
const RATE = wholeEnv('SOAK_RATE', 12);
const USERS = wholeEnv('SOAK_USERS', 8);
const POSTGRES_URL = process.env.SOAK_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Faults stop this long before the load ends: the recovery phase. */
const QUIET_S = Math.max(10, Math.round(DURATION_S * 0.1));
/** How long runs may take to reach a terminal state, and callbacks to arrive, after the load ended. */
const SETTLE_BOUND_MS = 60_000;
/** The stated bound: new triggers answered 200 within this long of Redis answering again. */
const RECOVERY_BOUND_MS = wholeEnv('SOAK_RECOVERY_BOUND_MS', 1_000);

type FaultKind = 'kill-worker' | 'kill-api' | 'rolling-restart' | 'redis-restart' | 'pg-terminate' | 'worker-stop';
const FAULT_KINDS: FaultKind[] = ['kill-worker', 'kill-api', 'rolling-restart', 'redis-restart', 'pg-terminate', 'worker-stop'];

/** About the longest each fault takes (a rolling restart stops and starts four nodes one by one). */
const LONGEST_FAULT_MS: Record<FaultKind, number> = {
  'kill-worker': 6_000,
  'kill-api': 6_000,
  'rolling-restart': 20_000,
  'redis-restart': 5_000,
  'pg-terminate': 4_000,
  'worker-stop': SOAK_TIMINGS.runLeaseMs * 2 + 2_000,
};

interface Fault {
  kind: FaultKind;
  at: number;
  ms: number;
  detail: string;
}

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s`;
const say = (line: string) => process.stdout.write(`[${elapsed()}] ${line}\n`);

/** The callback receiver: verifies each delivery's Standard Webhooks signature with its trigger's secret. */
function startReceiver(
  secrets: () => Map<string, string>,
  delivered: Map<string, Delivered>,
  random: () => number,
): Promise<{ server: Server; port: number; invalid: () => number }> {
  let invalid = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const triggerId = (req.url ?? '').slice(1);
      const secret = secrets().get(triggerId);
      // Some deliveries are refused on purpose, so the retry schedule is exercised.
      if (random() < 0.05) return void res.writeHead(503).end();
      try {
        const body = lib.verifyWebhookSignature<{ type: string; data: { invocation: { id: string; status: string } } }>(
          secret ?? 'whsec_' + Buffer.alloc(24).toString('base64'),
          req.headers,
          Buffer.concat(chunks),
        );
        if (body.type === 'invocation.completed') {
          const d = delivered.get(body.data.invocation.id) ?? { valid: 0, invalid: 0, statuses: new Set<string>() };
          d.valid++;
          d.statuses.add(body.data.invocation.status);
          delivered.set(body.data.invocation.id, d);
        }
        res.writeHead(204).end();
      } catch {
        invalid++;
        res.writeHead(400).end();
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port, invalid: () => invalid })),
  );
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-soak-'));
  const random = seededRandom(SEED);
  const dbName = `webhook_soak_${randomBytes(5).toString('hex')}`;
  say(
    `soak: ${DURATION_S} s of load (faults until ${DURATION_S - QUIET_S} s), seed ${SEED}, ~${RATE} turns/s from ${USERS} users; logs in ${dir}`,
  );

  const cleanups: Array<() => Promise<void> | void> = [];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch((e: unknown) => say(`cleanup: ${String(e)}`));
    cleanups.length = 0;
  };
  const onSignal = () => {
    say('interrupted: stopping the fleet, dropping the database');
    void cleanup().then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const redis = new RedisServer(await freePort(), dir);
    cleanups.push(() => redis.kill());
    await redis.start();
    const db = await createScratchDatabase(POSTGRES_URL, dbName);
    cleanups.push(() => db.drop());
    say(`Redis on ${redis.port}, PostgreSQL database ${dbName}`);

    const delivered = new Map<string, Delivered>();
    const secrets = new Map<string, string>();
    const receiver = await startReceiver(() => secrets, delivered, seededRandom(SEED + 1));
    cleanups.push(() => new Promise<void>((r) => receiver.server.close(() => r())));

    const script = join(__dirname, 'node.js');
    const env = {
      SOAK_DATABASE_URL: db.url,
      SOAK_REDIS_URL: redis.url,
      SOAK_EFFECTS_DIR: dir,
      SOAK_RECEIVER_URL: `http://127.0.0.1:${receiver.port}`,
    };
    const nodes = [
      new NodeSlot('api-0', 'api', await freePort(), script, env, dir),
      new NodeSlot('api-1', 'api', await freePort(), script, env, dir),
      new NodeSlot('worker-0', 'worker', 0, script, env, dir),
      new NodeSlot('worker-1', 'worker', 0, script, env, dir),
    ];
    cleanups.push(async () => {
      for (const n of nodes) {
        n.signal('SIGCONT');
        await n.kill();
        n.close();
      }
    });
    const seed = (await nodes[0].start(true)) as SeedResult;
    await Promise.all(nodes.slice(1).map((n) => n.start()));
    for (const t of seed.triggers) if (t.callbackSecret) secrets.set(t.id, t.callbackSecret);
    say(`fleet up: ${nodes.map((n) => `${n.name} pid ${n.pid}`).join(', ')}; ${seed.triggers.length} triggers`);

    const dbClient = new Client({ connectionString: db.url });
    await dbClient.connect();
    cleanups.push(() => dbClient.end());

    const recorder = new Recorder();
    const load = new Load({ nodes, triggers: seed.triggers, recorder, random: seededRandom(SEED + 2), rate: RATE, users: USERS });
    const probeTrigger = seed.triggers.find((t) => t.botId === 'probe')!;

    /** Triggers the probe every 50 ms until answered 200; ms from `since` to that answer. */
    const probe = async (since: number, boundMs = 60_000): Promise<number> => {
      while (Date.now() - since < boundMs) {
        const id = await load.fire(probeTrigger, { probe: Date.now() });
        if (id) return Date.now() - since;
        await sleep(50);
      }
      return Infinity;
    };

    const faults: Fault[] = [];
    const redisRestarts: Array<{ down: number; up: number; firstTriggerMs: number }> = [];
    const findings: string[] = [];
    const loadDone = load.run();
    // A line a minute, so a long soak shows it is alive.
    const progress = setInterval(() => {
      const calls = [...recorder.statuses.values()].reduce((sum, n) => sum + n, 0);
      say(`progress: ${fmt(recorder.accepted.size)} runs accepted, ${fmt(calls)} calls, ${faults.length} faults`);
    }, 60_000);
    cleanups.push(() => clearInterval(progress));
    const faultsEnd = started + (DURATION_S - QUIET_S) * 1000;
    const loadEnd = started + DURATION_S * 1000;

    const pickNode = (role: 'api' | 'worker') => {
      const of = nodes.filter((n) => n.role === role);
      return of[Math.floor(random() * of.length)];
    };
    const stopAndRestart = async (n: NodeSlot) => {
      const stop = await n.terminate();
      if (stop.outcome === 'hung') findings.push(`${n.name} did not exit within 15 s of SIGTERM (SIGKILLed) at ${elapsed()}`);
      await n.start();
      return `${n.name} ${stop.outcome} in ${stop.ms} ms`;
    };
    const inject = async (kind: FaultKind): Promise<string> => {
      switch (kind) {
        case 'kill-worker':
        case 'kill-api': {
          const n = pickNode(kind === 'kill-worker' ? 'worker' : 'api');
          await n.kill();
          await sleep(500 + random() * 2_000);
          await n.start();
          return `${n.name} SIGKILLed, restarted`;
        }
        case 'rolling-restart': {
          const done: string[] = [];
          for (const n of nodes) done.push(await stopAndRestart(n));
          return done.join('; ');
        }
        case 'redis-restart': {
          const down = Date.now();
          await redis.kill();
          await sleep(1_000 + random() * 2_000);
          const up = await redis.start();
          const firstTriggerMs = await probe(up);
          redisRestarts.push({ down, up, firstTriggerMs });
          return `down ${up - down} ms; first trigger answered 200 ${firstTriggerMs} ms after Redis answered`;
        }
        case 'pg-terminate': {
          let killed = 0;
          for (let i = 0; i < 3; i++) {
            const { rows } = await dbClient.query<{ ok: boolean }>(
              `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
              [dbName],
            );
            killed += rows.filter((r) => r.ok).length;
            await sleep(300 + random() * 700);
          }
          return `${killed} backends terminated`;
        }
        case 'worker-stop': {
          const n = pickNode('worker');
          const ms = SOAK_TIMINGS.runLeaseMs * 2 + Math.floor(random() * 2_000);
          n.signal('SIGSTOP');
          await sleep(ms);
          n.signal('SIGCONT');
          return `${n.name} SIGSTOPped for ${ms} ms (lease ${SOAK_TIMINGS.runLeaseMs} ms), SIGCONTed`;
        }
      }
    };

    // Every kind once (in a seeded order) before any repeats.
    let deck: FaultKind[] = [];
    await sleep(Math.min(5_000, (DURATION_S * 1000) / 10));
    while (Date.now() < faultsEnd) {
      if (deck.length === 0) deck = [...FAULT_KINDS].sort(() => random() - 0.5);
      // Only a fault that ends before the quiet period: the first in the deck that fits, else none.
      const fits = deck.findIndex((k) => Date.now() + LONGEST_FAULT_MS[k] <= faultsEnd);
      if (fits < 0) break;
      const [kind] = deck.splice(fits, 1);
      const at = Date.now();
      const detail = await inject(kind);
      faults.push({ kind, at, ms: Date.now() - at, detail });
      say(`fault ${kind}: ${detail}`);
      const gap = 2_000 + random() * 4_000;
      if (Date.now() + gap >= faultsEnd) break;
      await sleep(gap);
    }
    const quietAt = Date.now();
    const afterFaultsMs = await probe(quietAt);
    say(`faults stopped; first trigger answered 200 ${afterFaultsMs} ms later`);

    await sleep(Math.max(0, loadEnd - Date.now()));
    load.stop();
    await loadDone;
    clearInterval(progress);
    const loadEndedAt = Date.now();
    say(`load stopped: ${fmt(recorder.accepted.size)} runs accepted`);

    // Recovery: every run terminal, then every callback in.
    let settledMs = Infinity;
    while (Date.now() - loadEndedAt < SETTLE_BOUND_MS) {
      const { rows } = await dbClient.query<{ n: string }>(
        `SELECT count(*) AS n FROM webhook_invocations WHERE status IN ('queued', 'running')`,
      );
      if (Number(rows[0].n) === 0) {
        settledMs = Date.now() - loadEndedAt;
        break;
      }
      await sleep(250);
    }
    const withCallback = new Set(seed.triggers.filter((t: SeededTrigger) => t.callbackSecret).map((t) => t.id));
    const callbackStart = Date.now();
    for (;;) {
      const rows = await readRows(dbClient);
      const waiting = rows.filter((r) => withCallback.has(r.trigger_id) && !delivered.get(r.id)?.valid);
      if (waiting.length === 0 || Date.now() - callbackStart > SETTLE_BOUND_MS) break;
      await sleep(500);
    }
    const callbacksMs = Date.now() - callbackStart;

    const rows = await readRows(dbClient);
    const effects = readEffects(dir);
    const verdicts: Verdict[] = [
      checkTerminal(rows, recorder, settledMs),
      await checkCredits(dbClient, rows, seed),
      ...checkBodies(rows, effects),
      await checkFinishedOnce(dbClient, rows, seed),
      ...checkAnswers(rows, recorder),
      ...checkRateLimits(rows, redisRestarts),
      checkCallbacks(rows, seed, delivered, receiver.invalid()),
    ];
    const slowest = Math.max(afterFaultsMs, ...redisRestarts.map((r) => r.firstTriggerMs));
    verdicts.push({
      name: `back to normal: a new trigger answered 200 within ${RECOVERY_BOUND_MS} ms of Redis answering, and after the faults`,
      counted: `${redisRestarts.length} Redis restarts (${redisRestarts.map((r) => `${r.firstTriggerMs} ms`).join(', ') || 'none'}), ${afterFaultsMs} ms after the last fault`,
      violations: [...redisRestarts.map((r) => r.firstTriggerMs), afterFaultsMs].filter((ms) => ms > RECOVERY_BOUND_MS).length,
      examples: [],
      notes: [`slowest ${slowest} ms; callbacks all in ${(callbacksMs / 1000).toFixed(1)} s after the runs settled`],
    });

    const byKind = new Map<string, number>();
    for (const f of faults) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
    process.stdout.write(`\nSoak figures: ${DURATION_S} s of load, seed ${SEED}, ${fmt(rows.length)} runs, ${faults.length} faults `);
    process.stdout.write(
      `(${[...byKind].map(([k, n]) => `${k} ${n}`).join(', ')}), wall time ${((Date.now() - started) / 1000).toFixed(0)} s\n\n`,
    );
    let total = 0;
    for (const v of verdicts) {
      total += v.violations;
      process.stdout.write(`${v.violations === 0 ? '✔' : '✘'} ${v.name}: ${v.counted}, ${fmt(v.violations)} violations\n`);
      for (const note of v.notes ?? []) if (note) process.stdout.write(`    ${note}\n`);
      for (const e of v.examples) process.stdout.write(`    ! ${e}\n`);
    }
    for (const f of findings) process.stdout.write(`finding: ${f}\n`);
    process.stdout.write(`\n${total === 0 ? 'SOAK PASSED' : `SOAK FAILED: ${fmt(total)} violations`} (logs: ${dir})\n`);
    await cleanup();
    if (total === 0 && process.env.SOAK_KEEP_LOGS !== '1') rmSync(dir, { recursive: true, force: true });
    return total === 0 ? 0 : 1;
  } catch (e) {
    say(`the soak could not run: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    await cleanup();
    return 2;
  }
}

void main().then((code) => process.exit(code));
