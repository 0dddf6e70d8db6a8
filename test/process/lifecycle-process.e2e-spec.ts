/**
 * Shutdown and crash recovery with real processes: the compiled sample app is started with `node` on a
 * temporary SQLite file, stopped with SIGTERM (graceful shutdown) or SIGKILL (a crash), and started again
 * on the same file. The lease rule inside one process (recovery never touches a run whose owner still holds
 * a fresh lease) is checked in test/e2e/lifecycle.e2e-spec.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { verifyWebhookSignature } from '../../src/index.js';
import { startCallbackReceiver } from '../helpers/callback-receiver.js';
import { leasedRows } from '../helpers/db.js';
import {
  eventually,
  expectError,
  getStatus,
  rawAnswerOf,
  sleep,
  triggerOnAgent,
  syncInvocation,
  until,
  triggerBot,
} from '../helpers/http.js';
import {
  adminApi,
  freePort,
  killSampleApps,
  startSampleApp,
  stopSampleApp,
  within,
  type SampleAppProcess,
} from '../helpers/sample-app-process.js';

jest.setTimeout(30_000);

const ADMIN_TOKEN = 'lifecycle-process-admin-token-7b2e';
/** Preloaded into one process: SIGKILL right before a run accepted as running would start (test/fixtures). */
const CRASH_BEFORE_ACCEPTED_RUN = resolve(__dirname, '../fixtures/crash-before-accepted-run.cjs');

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lifecycle-process-'));
  dirs.push(dir);
  return dir;
}

/** A trigger as the sample app's admin API issues it. */
interface Trigger {
  id: string;
  url: string;
  key: string;
}

async function createTrigger(app: SampleAppProcess, botId: string): Promise<Trigger> {
  const created = await adminApi(app, 'POST', `/bots/${botId}/triggers`, { name: `${botId} trigger`, type: 'webhook' });
  expect(created.status).toBe(201);
  return created.body;
}

async function credits(app: SampleAppProcess): Promise<number> {
  const account = await adminApi(app, 'GET', '/accounts/demo');
  expect(account.status).toBe(200);
  return account.body.credits;
}

async function start(t: Trigger, inputs: unknown): Promise<string> {
  const started = await triggerBot(t, inputs);
  expect(started.status).toBe(200);
  return started.body.invocation.id;
}

const INTERRUPTED = { success: false, status: 'failed', outputs: [], error: { code: 'interrupted', message: expect.any(String) } };

afterAll(async () => {
  await killSampleApps();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('graceful shutdown of the real process (SIGTERM)', () => {
  const GRACE_MS = 1500;
  /** Shorter than the grace: the runs still finishing must keep a fresh lease (or a live process could take them over). */
  const LEASE_MS = 600;

  it('answers waiting syncs 408 at once, new triggers 503, lets short runs finish, interrupts the rest after the grace, leaves nothing running', async () => {
    const file = join(tempDir(), 'shutdown.sqlite');
    const env = {
      PORT: String(await freePort()),
      SQLITE_PATH: file,
      ADMIN_TOKEN,
      WEBHOOK_SHUTDOWN_GRACE_MS: String(GRACE_MS),
      WEBHOOK_RUN_LEASE_MS: String(LEASE_MS),
      WEBHOOK_MAX_CONCURRENT_RUNS: '2',
      WEBHOOK_MAX_CONCURRENT_RUNS_PER_ACCOUNT: '2', // one account: both slots are its own
    };
    let app = await startSampleApp(env);
    const slow = await createTrigger(app, 'slow');

    const longId = await start(slow, { ms: 10_000 });
    let syncSettled = false;
    const waiting = syncInvocation(slow, longId).finally(() => (syncSettled = true));
    const shortId = await start(slow, { ms: 300 });
    const queuedId = await start(slow, { ms: 200 }); // WEBHOOK_MAX_CONCURRENT_RUNS=2: waits for a slot
    // Both slots taken (the sync request went out before the two triggers after it were answered: it is parked).
    await until(async () => (await getStatus(slow, shortId)).body.invocation.status === 'running', 2000, 'the short run to start');
    expect((await getStatus(slow, longId)).body.invocation.status).toBe('running');
    expect((await getStatus(slow, queuedId)).body.invocation.status).toBe('queued');
    expect(syncSettled).toBe(false);

    const sigtermAt = Date.now();
    app.child.kill('SIGTERM');

    // The waiting caller is answered at once, with where the run is.
    const answered = await waiting;
    const answeredAfter = Date.now() - sigtermAt;
    expectError(answered, 408);
    expect(answered.body.status).toBe('running');
    expect(answeredAfter).toBeLessThan(1000);

    // A new trigger during the grace: the server still answers, but accepts nothing.
    const refused = await triggerBot(slow, { ms: 10 });
    const refusedAfter = Date.now() - sigtermAt;
    expectError(refused, 503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refusedAfter).toBeLessThan(GRACE_MS);

    // Late in the grace, more than a lease after SIGTERM: still answering, still refusing, the long run
    // still running with a lease in the future, and the queued run not started (a slot freed at ~200 ms).
    // A pause on purpose: the child renews its leases on its own real clock, and more than a lease must pass.
    await sleep(LEASE_MS + 400 - (Date.now() - sigtermAt));
    const late = await getStatus(slow, longId);
    expect(late.status).toBe(200);
    expect(late.body.invocation.status).toBe('running');
    expectError(await triggerBot(slow, { ms: 10 }), 503);
    const lateSyncAt = Date.now();
    const lateSync = await syncInvocation(slow, longId); // a sync arriving during the grace is not parked either
    expectError(lateSync, 408);
    expect(lateSync.body.status).toBe('running');
    expect(Date.now() - lateSyncAt).toBeLessThan(300);
    const lateRows = leasedRows(file);
    const lateCheckedAt = Date.now();
    expect(lateRows.find((r) => r.id === longId)).toMatchObject({ status: 'running' });
    expect(lateRows.find((r) => r.id === longId)!.lease_expires_at!).toBeGreaterThan(lateCheckedAt);
    // The short run's end freed a slot (what would have started the queued run), and still it waits.
    expect(lateRows.find((r) => r.id === shortId)).toMatchObject({ status: 'succeeded' });
    expect(lateRows.find((r) => r.id === queuedId)).toMatchObject({ status: 'queued', started_at: null });
    expect(lateCheckedAt - sigtermAt).toBeLessThan(GRACE_MS);

    // The process leaves after the grace (not after the 10 s run).
    const exit = await within(app.exited, 8_000);
    expect(exit).not.toBeNull();
    expect(exit!.code === 0 || exit!.signal === 'SIGTERM').toBe(true);
    const exitedAfter = app.exitedAt()! - sigtermAt;
    expect(exitedAfter).toBeGreaterThanOrEqual(GRACE_MS - 100);
    expect(exitedAfter).toBeLessThan(GRACE_MS + 3000);

    const rows = leasedRows(file);
    const short = rows.find((r) => r.id === shortId)!;
    const long = rows.find((r) => r.id === longId)!;
    // The short run finished during the grace, after SIGTERM.
    expect(short.status).toBe('succeeded');
    expect(JSON.parse(short.outputs!)).toEqual([{ title: 'slept', message: '300' }]);
    expect(short.finished_at!).toBeGreaterThanOrEqual(sigtermAt - 50);
    expect(short.finished_at! - sigtermAt).toBeLessThan(GRACE_MS);
    // The long one was stopped when the grace ran out.
    expect(long.status).toBe('failed');
    expect(JSON.parse(long.error!)).toEqual({ code: 'interrupted', message: expect.any(String) });
    expect(long.finished_at! - sigtermAt).toBeGreaterThanOrEqual(GRACE_MS - 100);
    expect(rows.filter((r) => r.status === 'running')).toEqual([]);
    // Left queued for the next start; the refused triggers stored nothing.
    expect(rows.find((r) => r.id === queuedId)).toMatchObject({ status: 'queued', started_at: null });
    expect(rows).toHaveLength(3);
    process.stdout.write(
      `[lifecycle-process] SIGTERM: 408 after ${answeredAfter} ms, 503 after ${refusedAfter} ms, ` +
        `short run finished after ${short.finished_at! - sigtermAt} ms, long run interrupted after ${long.finished_at! - sigtermAt} ms, exit after ${exitedAfter} ms (grace ${GRACE_MS} ms)\n`,
    );

    // The next start on the same database: a sync on the interrupted run answers its failure.
    app = await startSampleApp(env);
    const after = await syncInvocation(slow, longId);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(INTERRUPTED);
    expect((await syncInvocation(slow, queuedId)).body).toEqual({ success: true, outputs: [{ title: 'slept', message: '200' }] });
    expect((await syncInvocation(slow, shortId)).body).toEqual({ success: true, outputs: [{ title: 'slept', message: '300' }] });
    app.child.kill('SIGTERM');
    expect(await within(app.exited, 8_000)).not.toBeNull();
  });
});

describe('graceful shutdown with a kept-alive caller (SIGTERM)', () => {
  const GRACE_MS = 300;

  it("closes the connection of an answer given once shutdown began, so a caller's kept-alive connection does not hold the process for the server's keep-alive timeout", async () => {
    const app = await startSampleApp({
      PORT: String(await freePort()),
      SQLITE_PATH: join(tempDir(), 'kept-alive.sqlite'),
      ADMIN_TOKEN,
      WEBHOOK_SHUTDOWN_GRACE_MS: String(GRACE_MS),
    });
    const slow = await createTrigger(app, 'slow');
    // One kept-alive connection (Node's agent keeps an idle socket open as long as the server does).
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const post = () => triggerOnAgent(agent, slow, 8);
      const first = post();
      first.end('{"ms":1}');
      expect(await rawAnswerOf(first)).toMatchObject({ status: 200, connection: 'keep-alive' });
      // A trigger whose body is still arriving when SIGTERM comes: in flight while the server closes (Node's
      // server.close() ends only idle connections, and this one is not).
      const late = post();
      const answered = rawAnswerOf(late);
      late.write('{"ms":');
      await sleep(100);
      const sigtermAt = Date.now();
      app.child.kill('SIGTERM');
      await sleep(GRACE_MS);
      late.end('1}');
      const answer = await answered;
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body)).toMatchObject({ success: false, statusCode: 503 });
      expect(answer.connection).toBe('close');
      // Kept alive, the connection held the server's close until its keep-alive timeout (5 s) ran out.
      const exit = await within(app.exited, 8_000);
      expect(exit).not.toBeNull();
      expect(exit!.code === 0 || exit!.signal === 'SIGTERM').toBe(true);
      expect(app.exitedAt()! - sigtermAt).toBeLessThan(GRACE_MS + 1_500);
    } finally {
      agent.destroy();
    }
  });
});

describe('crash recovery of the real process (SIGKILL, then restart)', () => {
  it('stores the plain run failed (interrupted), runs the retryInterrupted one again, charges each run once, leaves nothing running', async () => {
    const file = join(tempDir(), 'crash.sqlite');
    // Status polls count against the per-trigger limit (10/s by default); raise it so polling is never refused.
    const env = {
      PORT: String(await freePort()),
      SQLITE_PATH: file,
      ADMIN_TOKEN,
      WEBHOOK_RUN_LEASE_MS: '1000',
      WEBHOOK_TRIGGER_RPS: '1000',
    };
    let app = await startSampleApp(env);
    const slow = await createTrigger(app, 'slow');
    const retry = await createTrigger(app, 'slow-retry');
    const creditsBefore = await credits(app);

    const plainId = await start(slow, { ms: 10_000 });
    const retryId = await start(retry, { ms: 1500 });
    expect((await getStatus(slow, plainId)).body.invocation.status).toBe('running');
    expect((await getStatus(retry, retryId)).body.invocation.status).toBe('running');
    const firstStart = (await getStatus(retry, retryId)).body.invocation.startedAt as string;

    app.child.kill('SIGKILL');
    expect(await within(app.exited, 5_000)).toEqual({ code: null, signal: 'SIGKILL' });
    const killedAt = Date.now();
    // The dead process had been renewing the lease; nothing may recover the run before it runs out.
    const leaseAtKill = leasedRows(file).find((r) => r.id === plainId)!.lease_expires_at!;
    expect(leaseAtKill).toBeGreaterThan(killedAt - 1000);

    app = await startSampleApp(env);
    const restartedAfter = Date.now() - killedAt;
    // Charged once per run: the crash and the second run of slow-retry cost nothing more.
    expect(await credits(app)).toBe(creditsBefore - 2);

    // The plain run: failed, "interrupted", never run again.
    const plain = await eventually('the slow run to be recovered', 5_000, async () => {
      const s = await getStatus(slow, plainId);
      expect(s.status).toBe(200);
      return s.body.invocation.status === 'running' ? undefined : s.body;
    });
    const plainRecoveredAfter = Date.now() - killedAt;
    expect(plain).toEqual({
      success: false,
      invocation: expect.objectContaining({ id: plainId, status: 'failed', finishedAt: expect.any(String) }),
      outputs: [],
      error: { code: 'interrupted', message: expect.any(String) },
    });
    expect(Date.parse(plain.invocation.finishedAt)).toBeGreaterThanOrEqual(leaseAtKill);
    expect(await syncInvocation(slow, plainId)).toEqual(expect.objectContaining({ status: 200, body: INTERRUPTED }));

    // The retryInterrupted run: started again by this process, and its sync gets the outputs.
    const retried = await within(syncInvocation(retry, retryId), 8_000);
    const retriedAfter = Date.now() - killedAt;
    expect(retried).not.toBeNull();
    expect(retried!.status).toBe(200);
    expect(retried!.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '1500' }] });
    const retriedStatus = (await getStatus(retry, retryId)).body.invocation;
    expect(Date.parse(retriedStatus.startedAt)).toBeGreaterThan(Date.parse(firstStart));
    expect(Date.parse(retriedStatus.startedAt)).toBeGreaterThanOrEqual(killedAt);
    expect(app.output()).toContain(`Run ${retryId} of bot slow-retry was interrupted; running it again (retryInterrupted)`);
    expect(app.output()).toContain(`Run ${plainId} of bot slow was interrupted; stored failed`);

    expect(await credits(app)).toBe(creditsBefore - 2);
    for (const botId of ['slow', 'slow-retry']) {
      const history = (await adminApi(app, 'GET', `/bots/${botId}/invocations`)).body as { status: string }[];
      expect(history.map((h) => h.status)).toEqual([botId === 'slow' ? 'failed' : 'succeeded']);
    }

    app.child.kill('SIGTERM');
    expect(await within(app.exited, 8_000)).not.toBeNull();
    const rows = leasedRows(file);
    expect(rows.filter((r) => r.status === 'running')).toEqual([]);
    expect(rows.map((r) => [r.id, r.status]).sort()).toEqual(
      [
        [plainId, 'failed'],
        [retryId, 'succeeded'],
      ].sort(),
    );
    process.stdout.write(
      `[lifecycle-process] SIGKILL: restart ready after ${restartedAfter} ms, slow run seen failed after ${plainRecoveredAfter} ms, ` +
        `slow-retry rerun answered after ${retriedAfter} ms (lease 1000 ms)\n`,
    );
  });

  it("keeps a run's emitted outputs through a crash: the row holds them, and recovery stores the run failed with them", async () => {
    const file = join(tempDir(), 'crash-emit.sqlite');
    const env = {
      PORT: String(await freePort()),
      SQLITE_PATH: file,
      ADMIN_TOKEN,
      WEBHOOK_RUN_LEASE_MS: '1000',
      WEBHOOK_TRIGGER_RPS: '1000',
    };
    let app = await startSampleApp(env);
    const stream = await createTrigger(app, 'stream');
    const id = await start(stream, { n: 100, ms: 100 });
    const seen = await eventually('three emitted outputs', 5_000, async () => {
      const outputs = (await getStatus(stream, id)).body.outputs as unknown[] | undefined;
      return outputs && outputs.length >= 3 ? outputs : undefined;
    });
    app.child.kill('SIGKILL');
    expect(await within(app.exited, 5_000)).toEqual({ code: null, signal: 'SIGKILL' });
    const step = (i: number) => ({ title: `step ${i}`, message: String(i) });
    // What was acknowledged to the bot before the crash is in the row.
    const row = leasedRows(file).find((r) => r.id === id)!;
    expect(row.status).toBe('running');
    const kept = JSON.parse(row.outputs!) as unknown[];
    expect(kept.length).toBeGreaterThanOrEqual(seen.length);
    expect(kept).toEqual(kept.map((_o, i) => step(i + 1)));

    app = await startSampleApp(env);
    const recovered = await eventually('the stream run to be recovered', 5_000, async () => {
      const s = await getStatus(stream, id);
      return s.body.invocation.status === 'running' ? undefined : s.body;
    });
    expect(recovered).toMatchObject({ success: false, invocation: { status: 'failed' }, error: { code: 'interrupted' }, outputs: kept });
    expect((await syncInvocation(stream, id)).body).toEqual({ ...INTERRUPTED, outputs: kept });
    app.child.kill('SIGTERM');
    expect(await within(app.exited, 8_000)).not.toBeNull();
  });
});

describe('a run accepted as running whose process dies before its bot starts (SIGKILL, then restart)', () => {
  it('is recovered by its lease once the process is back, runs once (retryInterrupted), and is charged once', async () => {
    const file = join(tempDir(), 'accepted-running.sqlite');
    const env = { PORT: String(await freePort()), SQLITE_PATH: file, ADMIN_TOKEN, WEBHOOK_RUN_LEASE_MS: '1000' };
    let app = await startSampleApp(env);
    const retry = await createTrigger(app, 'slow-retry');
    const creditsBefore = await credits(app);
    await stopSampleApp(app);

    // This process dies right after the COMMIT that stored the run running for it, before the bot starts.
    app = await startSampleApp({ ...env, NODE_OPTIONS: `--require ${CRASH_BEFORE_ACCEPTED_RUN}` });
    const answer = await triggerBot(retry, { ms: 100 }).catch((error: unknown) => error);
    expect(String(answer)).toMatch(/fetch failed/); // no answer: the connection died with the process
    expect(await within(app.exited, 5_000)).toEqual({ code: null, signal: 'SIGKILL' });
    const killedAt = Date.now();
    const [stored] = leasedRows(file);
    // Stored by the accept step itself: running, owned by the dead process, leased, its first attempt counted.
    expect(stored).toMatchObject({ bot_id: 'slow-retry', status: 'running', attempts: 1, finished_at: null });
    expect(stored.owner).toEqual(expect.any(String));
    expect(stored.started_at).toEqual(expect.any(Number));
    expect(stored.lease_expires_at!).toBeGreaterThan(killedAt - 1000);

    app = await startSampleApp(env);
    expect(await credits(app)).toBe(creditsBefore - 1); // charged at accept, once
    const synced = await within(syncInvocation(retry, stored.id), 8_000);
    expect(synced?.status).toBe(200);
    expect(synced!.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '100' }] });
    expect(app.output()).toContain(`Run ${stored.id} of bot slow-retry was interrupted; running it again (retryInterrupted)`);
    expect(await credits(app)).toBe(creditsBefore - 1);
    await stopSampleApp(app);
    const rows = leasedRows(file);
    expect(rows.map((r) => [r.id, r.status, r.attempts])).toEqual([[stored.id, 'succeeded', 2]]);
  });
});

describe('a callback delivery across a crash (SIGKILL between storing and delivering)', () => {
  it('arrives after the restart with the same webhook-id, and is recorded delivered once', async () => {
    const receiver = await startCallbackReceiver();
    try {
      const env = {
        PORT: String(await freePort()),
        SQLITE_PATH: join(tempDir(), 'callbacks.sqlite'),
        ADMIN_TOKEN,
        WEBHOOK_CALLBACK_ALLOWED_HOSTS: '127.0.0.1',
        WEBHOOK_CALLBACK_RETRY_MS: '0,200,200',
        // Short, so the dead sender's claim (timeout + 2 s) runs out soon after the restart.
        WEBHOOK_CALLBACK_TIMEOUT_MS: '2000',
      };
      let app = await startSampleApp(env);
      const echo = await createTrigger(app, 'echo');
      const set = await adminApi(app, 'PUT', `/triggers/${echo.id}/callback`, { url: `${receiver.origin}/runs` });
      expect(set.status).toBe(200);
      const secret = set.body.secret as string;
      // The first attempt is received but never answered: the process dies while it is being sent.
      receiver.respond((res, call) => {
        if (receiver.received.indexOf(call) > 0) res.writeHead(200).end();
      });

      const id = await start(echo, { text: 'survives' });
      await eventually('the first attempt to reach the receiver', 5_000, () => (receiver.received.length === 1 ? true : undefined));
      app.child.kill('SIGKILL');
      expect(await within(app.exited, 5_000)).toEqual({ code: null, signal: 'SIGKILL' });

      app = await startSampleApp(env);
      await eventually('the delivery to arrive again after the restart', 20_000, () => (receiver.received.length === 2 ? true : undefined));
      const [first, again] = receiver.received;
      expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
      expect(again.body.toString()).toBe(first.body.toString());
      const body = verifyWebhookSignature<{ type: string; data: { invocation: Record<string, unknown> } }>(
        secret,
        again.headers,
        again.body,
      );
      expect(body.type).toBe('invocation.completed');
      expect(body.data.invocation).toMatchObject({ id, status: 'succeeded', outputs: [{ title: 'text', message: 'survives' }] });

      const log = await eventually('the delivery to be recorded delivered', 5_000, async () => {
        const res = await adminApi(app, 'GET', `/triggers/${echo.id}/deliveries`);
        return res.body?.[0]?.status === 'delivered' ? (res.body as Array<Record<string, unknown>>) : undefined;
      });
      expect(log).toHaveLength(1);
      expect(log[0]).toMatchObject({
        invocationId: id,
        event: 'invocation.completed',
        status: 'delivered',
        responseStatus: 200,
        attempts: 1,
      });
      // The process stops once its attempts in flight ended: by then it sent all it would send.
      expect(await within(stopSampleApp(app), 10_000)).not.toBeNull();
      expect(receiver.received).toHaveLength(2); // delivered once recorded: not sent again
    } finally {
      await receiver.close();
    }
  }, 45_000);
});
