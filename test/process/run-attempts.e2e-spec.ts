/**
 * The bound on attempts of interrupted `retryInterrupted` runs (`maxRunAttempts`, default 3), with real
 * processes: the sample app's `slow-retry` bot is replaced, in the processes that run bots, by one that
 * SIGKILLs its own process every time it starts (test/fixtures/retry-bot-kills-process.cjs, preloaded).
 * Each death leaves the run `running` under a dead owner; the next process recovers it and runs it again,
 * until its third attempt died: then the run is stored `failed` ("interrupted_too_often"), never started a
 * fourth time, charged once and not refunded. On SQLite (one process, restarted after each death) and on
 * PostgreSQL + Redis with the BullMQ runner (an API node, and a worker restarted after each death).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { leasedRows } from '../helpers/db.js';
import { eventually, getStatus, syncInvocation, triggerBot } from '../helpers/http.js';
import {
  adminApi,
  freePort,
  killSampleApps,
  launchSampleApp,
  startSampleApp,
  stopSampleApp,
  within,
  type SampleAppEntry,
  type SampleAppProcess,
} from '../helpers/sample-app-process.js';
import { createScratchDatabase, deleteRedisKeys, serviceUrl } from '../helpers/services.js';

jest.setTimeout(90_000);

const ADMIN_TOKEN = 'run-attempts-admin-token-3c9d41';
const KILLS_ITS_PROCESS = resolve(__dirname, '../fixtures/retry-bot-kills-process.cjs');
/** The default of `maxRunAttempts`: the sample app does not set it. */
const MAX_RUN_ATTEMPTS = 3;
const tooOften = (attempts: number) => ({
  code: 'interrupted_too_often',
  message: `The run was interrupted too often: its process stopped before it finished on each of ${attempts} attempts`,
});
const TOO_OFTEN = tooOften(MAX_RUN_ATTEMPTS);

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'run-attempts-'));
  dirs.push(dir);
  return dir;
}

afterAll(async () => {
  await killSampleApps();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The run ids the killing bot wrote, one line per start. */
const starts = (log: string): string[] => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);

/**
 * Starts processes of `entry` with the killing bot until `kills` of them died by SIGKILL, each after the
 * bot's start that the log shows; a process that ends any other way fails the test.
 */
async function restartUntilKilled(env: Record<string, string>, entry: SampleAppEntry, log: string, kills: number): Promise<void> {
  while (starts(log).length < kills) {
    const before = starts(log).length;
    const app = launchSampleApp(env, entry);
    const exit = await within(app.exited, 30_000);
    if (!exit) throw new Error(`The ${entry} process did not die within 30 s:\n${app.output()}`);
    expect(exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(starts(log)).toHaveLength(before + 1);
  }
}

async function createTrigger(app: SampleAppProcess): Promise<{ id: string; url: string; key: string }> {
  const created = await adminApi(app, 'POST', '/bots/slow-retry/triggers', { name: 'kills its process', type: 'webhook' });
  expect(created.status).toBe(201);
  return created.body;
}

describe('a retryInterrupted run whose bot kills its process every time (SQLite, one process restarted)', () => {
  it(`runs ${MAX_RUN_ATTEMPTS} times, then is stored failed (interrupted_too_often) with its credits kept; never a fourth start`, async () => {
    const dir = tempDir();
    const file = join(dir, 'attempts.sqlite');
    const log = join(dir, 'starts.log');
    const env = {
      PORT: String(await freePort()),
      SQLITE_PATH: file,
      ADMIN_TOKEN,
      WEBHOOK_RUN_LEASE_MS: '1000',
      WEBHOOK_TRIGGER_RPS: '1000',
      KILLING_BOT_LOG: log,
      NODE_OPTIONS: `--require ${KILLS_ITS_PROCESS}`,
    };
    const first = await startSampleApp(env);
    const trigger = await createTrigger(first);
    const before = (await adminApi(first, 'GET', '/accounts/demo')).body.credits as number;
    const started = await triggerBot(trigger, { ms: 100 });
    expect(started.status).toBe(200);
    const id = started.body.invocation.id as string;
    expect(await within(first.exited, 10_000)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(starts(log)).toEqual([id]);
    expect(leasedRows(file)).toEqual([expect.objectContaining({ id, status: 'running', attempts: 1 })]);

    // Each restart recovers the run (its lease ran out) and starts it again, which kills that process too.
    await restartUntilKilled(env, 'main', log, MAX_RUN_ATTEMPTS);
    expect(leasedRows(file)).toEqual([expect.objectContaining({ id, status: 'running', attempts: MAX_RUN_ATTEMPTS })]);

    // The next process finds its attempts used up: failed, not started again (this process lives).
    const app = await startSampleApp(env);
    const ended = await eventually('the run to be stored failed', 10_000, async () => {
      const s = await getStatus(trigger, id);
      return s.body.invocation?.status === 'running' ? undefined : s.body;
    });
    expect(ended).toEqual({
      success: false,
      invocation: expect.objectContaining({ id, status: 'failed', finishedAt: expect.any(String) }),
      outputs: [],
      error: TOO_OFTEN,
    });
    expect((await syncInvocation(trigger, id)).body).toEqual({ success: false, status: 'failed', outputs: [], error: TOO_OFTEN });
    expect(app.output()).toContain(`Run ${id} of bot slow-retry was interrupted on each of its ${MAX_RUN_ATTEMPTS} attempts`);
    expect(starts(log)).toEqual(Array(MAX_RUN_ATTEMPTS).fill(id));
    // Charged once, at accept; the failure refunds nothing.
    expect((await adminApi(app, 'GET', '/accounts/demo')).body.credits).toBe(before - 1);
    expect(app.exitedAt()).toBeUndefined();

    expect(await stopSampleApp(app)).not.toBeNull();
    expect(leasedRows(file)).toEqual([expect.objectContaining({ id, status: 'failed', attempts: MAX_RUN_ATTEMPTS })]);
    expect(starts(log)).toHaveLength(MAX_RUN_ATTEMPTS);
  });
});

const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');
const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');

if (!postgresUrl || !redisUrl) {
  it.todo('run attempts on BullMQ NOT RUN: set WEBHOOK_TEST_POSTGRES_URL=postgres://… and WEBHOOK_TEST_REDIS_URL=redis://…');
} else {
  describe('a retryInterrupted run whose bot kills its worker every time (PostgreSQL + BullMQ, a worker restarted)', () => {
    const keyPrefix = `webhook-test:${randomBytes(6).toString('hex')}:`;
    let db: { url: string; drop: () => Promise<void> };
    let pg: Client;

    beforeAll(async () => {
      db = await createScratchDatabase(postgresUrl);
      pg = new Client({ connectionString: db.url });
      await pg.connect();
    });

    afterAll(async () => {
      await killSampleApps();
      await pg?.end();
      await db?.drop();
      await deleteRedisKeys(redisUrl, keyPrefix);
    });

    const row = async (id: string) =>
      (
        await pg.query<{ status: string; attempts: number; error: string | null }>(
          'SELECT status, attempts, error FROM webhook_invocations WHERE id = $1',
          [id],
        )
      ).rows[0];
    const balance = async () =>
      Number((await pg.query<{ credits: string }>(`SELECT credits FROM webhook_accounts WHERE id = 'demo'`)).rows[0].credits);

    /**
     * Starts an API node and a killing worker after another until the run's `attempts` (its `maxRunAttempts`) are
     * used, then a last worker that stores it failed: charged once, never started again, and nothing of it left in
     * its account's runs pending (its place in line and its share of `maxQueuedRuns`).
     */
    const killedOnEveryAttempt = async (attempts: number, env: Record<string, string> = {}): Promise<void> => {
      const log = join(tempDir(), 'starts.log');
      const shared = {
        DATABASE_URL: db.url,
        REDIS_URL: redisUrl,
        REDIS_KEY_PREFIX: keyPrefix,
        ADMIN_TOKEN,
        WEBHOOK_KEY_SECRET: `run-attempts-key-secret-${randomBytes(8).toString('hex')}`,
        WEBHOOK_RUN_LEASE_MS: '1500',
        ...env,
      };
      const worker = { ...shared, KILLING_BOT_LOG: log, NODE_OPTIONS: `--require ${KILLS_ITS_PROCESS}` };
      const api = await startSampleApp({ ...shared, WEBHOOK_ROLE: 'api', PORT: String(await freePort()) });
      const trigger = await createTrigger(api);
      const before = await balance();
      const started = await triggerBot(trigger, { ms: 100 });
      expect(started.status).toBe(200);
      const id = started.body.invocation.id as string;

      // The first worker takes the job and dies; each next one takes the run over (BullMQ's stalled-job
      // check, or the lease recovery) and dies too.
      await restartUntilKilled(worker, 'worker', log, attempts);
      expect(starts(log)).toEqual(Array(attempts).fill(id));
      expect(await row(id)).toMatchObject({ status: 'running', attempts });

      const last = await startSampleApp(worker, 'worker');
      await eventually('the run to be stored failed', 15_000, async () => ((await row(id)).status === 'failed' ? true : undefined));
      const stored = await row(id);
      expect({ ...stored, error: JSON.parse(stored.error!) }).toEqual({ status: 'failed', attempts, error: tooOften(attempts) });
      expect((await syncInvocation(trigger, id)).body).toEqual({
        success: false,
        status: 'failed',
        outputs: [],
        error: tooOften(attempts),
      });
      expect(await balance()).toBe(before - 1);
      expect(last.exitedAt()).toBeUndefined();
      expect(starts(log)).toHaveLength(attempts);
      // Once the run ended, its account has no run pending (deleted with its last member): the account's place in
      // line and its share of maxQueuedRuns are whole again, not one run short for its next 10 idle minutes.
      const redis = new Redis(redisUrl);
      try {
        await eventually("the account's runs pending to go", 5_000, async () =>
          (await redis.exists(`${keyPrefix}pending-runs:demo`)) === 0 ? true : undefined,
        );
      } finally {
        redis.disconnect();
      }
      expect(await stopSampleApp(last)).not.toBeNull();
      expect(await stopSampleApp(api)).not.toBeNull();
    };

    it(`is taken over by the next worker until its ${MAX_RUN_ATTEMPTS} attempts are used, then stored failed (interrupted_too_often), credits kept; its account's count of pending runs goes with it`, async () => {
      // Its job stalls once per dead worker and is handed to the next worker each time.
      await killedOnEveryAttempt(MAX_RUN_ATTEMPTS);
    });

    it("with maxRunAttempts 2, its job stalls twice (two workers killed holding it): the third worker is still handed that job and stores the run failed; its account's count of pending runs goes with it", async () => {
      // BullMQ's default failed a job stalled twice without handing it to anyone, and the lease recovery, not
      // dispatching a run with no attempt left, stored it failed: its end was never counted off.
      await killedOnEveryAttempt(2, { WEBHOOK_MAX_RUN_ATTEMPTS: '2' });
    });
  });
}
