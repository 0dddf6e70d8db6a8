/**
 * Shutdown and crash recovery with real processes: the compiled sample app is started with `node` on a
 * temporary SQLite file, stopped with SIGTERM (graceful shutdown) or SIGKILL (a crash), and started again
 * on the same file. The lease rule inside one process (recovery never touches a run whose owner still holds
 * a fresh lease) is checked in test/e2e/lifecycle.e2e-spec.ts.
 */
import Database from 'better-sqlite3';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sleep } from './helpers/http.js';
import { freePort, within } from './helpers/process.js';

jest.setTimeout(30_000);

const ROOT = resolve(__dirname, '..');
const MAIN = join(ROOT, 'sample-app/dist/sample-app/src/main.js');
const ADMIN_TOKEN = 'lifecycle-process-admin-token-7b2e';
const AUTH = { Authorization: `Bearer ${ADMIN_TOKEN}` };
/** Cleared from the inherited environment so only what a test sets applies. */
const ENV_VARS = [
  'PORT',
  'SQLITE_PATH',
  'PUBLIC_BASE_URL',
  'ADMIN_TOKEN',
  'WEBHOOK_SYNC_TIMEOUT_MS',
  'WEBHOOK_TRIGGER_RPS',
  'WEBHOOK_ACCOUNT_RPM',
  'WEBHOOK_KEY_SECRET',
  'WEBHOOK_MAX_CONCURRENT_RUNS',
  'WEBHOOK_SHUTDOWN_GRACE_MS',
  'WEBHOOK_BOT_TIMEOUT_MS',
  'WEBHOOK_RUN_LEASE_MS',
];

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lifecycle-process-'));
  dirs.push(dir);
  return dir;
}

// ---------------------------------------------------------------------------------------------------------
// Process handling (as in sample-app.e2e-spec.ts)

type Exit = { code: number | null; signal: NodeJS.Signals | null };

interface Running {
  child: ChildProcess;
  base: string;
  output: () => string;
  exited: Promise<Exit>;
  /** Date.now() when the process exited. */
  exitedAt: () => number | undefined;
}

const children = new Set<ChildProcess>();

function launch(env: Record<string, string>): Omit<Running, 'base'> {
  const inherited: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const name of ENV_VARS) delete inherited[name];
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  let exitedAt: number | undefined;
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<Exit>((done) =>
    child.on('exit', (code, signal) => {
      exitedAt = Date.now();
      children.delete(child);
      done({ code, signal });
    }),
  );
  return { child, output: () => out, exited, exitedAt: () => exitedAt };
}

async function startApp(env: Record<string, string>): Promise<Running> {
  const base = `http://127.0.0.1:${env.PORT}`;
  const app = { ...launch(env), base };
  const deadline = Date.now() + 20_000;
  // Ready once the server answers and the banner (printed after listen) is out.
  while (Date.now() < deadline) {
    if (app.exitedAt() !== undefined) throw new Error(`The sample app exited early:\n${app.output()}`);
    const ok = await fetch(`${base}/admin`).then((r) => r.ok, () => false);
    if (ok && /Echo trigger|echo bot has no trigger/.test(app.output())) return app;
    await sleep(50);
  }
  throw new Error(`The sample app did not answer within 20 s:\n${app.output()}`);
}


/** Polls `check` until it returns a value (not undefined), or fails after `ms`. */
async function eventually<T>(what: string, ms: number, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${ms} ms waiting for: ${what}`);
    await sleep(25);
  }
}

// ---------------------------------------------------------------------------------------------------------
// HTTP helpers

interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

async function http(method: string, url: string, options: { headers?: Record<string, string>; json?: unknown } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined;
  if (options.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
  return { status: res.status, body: parsed, headers: res.headers };
}

interface Trigger {
  id: string;
  url: string;
  key: string;
}

const admin = (app: Running, method: string, path: string, json?: unknown) => http(method, `${app.base}/admin/api${path}`, { headers: AUTH, json });

async function createTrigger(app: Running, botId: string): Promise<Trigger> {
  const created = await admin(app, 'POST', `/bots/${botId}/triggers`, { name: `${botId} trigger`, type: 'webhook' });
  expect(created.status).toBe(201);
  return created.body;
}

async function credits(app: Running): Promise<number> {
  const account = await admin(app, 'GET', '/accounts/demo');
  expect(account.status).toBe(200);
  return account.body.credits;
}

/** The trigger URL as issued by the app, pointed at this process (same port, same path). */
async function trigger(t: Trigger, inputs: unknown): Promise<Reply> {
  return http('POST', t.url, { headers: { 'X-Key': t.key }, json: inputs });
}

async function start(t: Trigger, inputs: unknown): Promise<string> {
  const started = await trigger(t, inputs);
  expect(started.status).toBe(200);
  return started.body.invocation.id;
}

const sync = (t: Trigger, id: string) => http('GET', `${t.url}/invocation/${id}/sync`, { headers: { 'X-Key': t.key } });
const status = (t: Trigger, id: string) => http('GET', `${t.url}/invocation/${id}`, { headers: { 'X-Key': t.key } });

function expectErrorBody(reply: Reply, statusCode: number): void {
  expect(reply.status).toBe(statusCode);
  const { status: runStatus, ...shape } = reply.body as Record<string, unknown>;
  expect(shape).toEqual({ success: false, statusCode, error: expect.any(String), message: expect.any(String) });
  if (statusCode === 408) expect(runStatus).toEqual(expect.any(String));
  else expect(runStatus).toBeUndefined();
}

// ---------------------------------------------------------------------------------------------------------
// Reading the database file directly, read-only

interface Row {
  id: string;
  bot_id: string;
  status: string;
  error: string | null;
  outputs: string | null;
  started_at: number | null;
  finished_at: number | null;
  owner: string | null;
  lease_expires_at: number | null;
}

function readRows(file: string): Row[] {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT id, bot_id, status, error, outputs, started_at, finished_at, owner, lease_expires_at FROM webhook_invocations').all() as Row[];
  } finally {
    db.close();
  }
}

const INTERRUPTED = { success: false, status: 'failed', outputs: [], error: { code: 'interrupted', message: expect.any(String) } };

// ---------------------------------------------------------------------------------------------------------

beforeAll(() => {
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'sample-app/tsconfig.json'], { cwd: ROOT, stdio: 'pipe' });
  expect(existsSync(MAIN)).toBe(true);
}, 60_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await sleep(100);
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
    };
    let app = await startApp(env);
    const slow = await createTrigger(app, 'slow');

    const longId = await start(slow, { ms: 10_000 });
    let syncSettled = false;
    const waiting = sync(slow, longId).finally(() => (syncSettled = true));
    const shortId = await start(slow, { ms: 300 });
    const queuedId = await start(slow, { ms: 200 }); // WEBHOOK_MAX_CONCURRENT_RUNS=2: waits for a slot
    await sleep(100); // the sync request is parked in its waiter; the short run is ~100 ms into its 300 ms
    expect((await status(slow, longId)).body.invocation.status).toBe('running');
    expect((await status(slow, shortId)).body.invocation.status).toBe('running');
    expect((await status(slow, queuedId)).body.invocation.status).toBe('queued');
    expect(syncSettled).toBe(false);

    const sigtermAt = Date.now();
    app.child.kill('SIGTERM');

    // The waiting caller is answered at once, with where the run is.
    const answered = await waiting;
    const answeredAfter = Date.now() - sigtermAt;
    expectErrorBody(answered, 408);
    expect(answered.body.status).toBe('running');
    expect(answeredAfter).toBeLessThan(1000);

    // A new trigger during the grace: the server still answers, but accepts nothing.
    const refused = await trigger(slow, { ms: 10 });
    const refusedAfter = Date.now() - sigtermAt;
    expectErrorBody(refused, 503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refusedAfter).toBeLessThan(GRACE_MS);

    // Late in the grace, more than a lease after SIGTERM: still answering, still refusing, the long run
    // still running with a lease in the future, and the queued run not started (a slot freed at ~200 ms).
    await sleep(LEASE_MS + 400 - (Date.now() - sigtermAt));
    const late = await status(slow, longId);
    expect(late.status).toBe(200);
    expect(late.body.invocation.status).toBe('running');
    expectErrorBody(await trigger(slow, { ms: 10 }), 503);
    const lateSyncAt = Date.now();
    const lateSync = await sync(slow, longId); // a sync arriving during the grace is not parked either
    expectErrorBody(lateSync, 408);
    expect(lateSync.body.status).toBe('running');
    expect(Date.now() - lateSyncAt).toBeLessThan(300);
    const lateRows = readRows(file);
    const lateCheckedAt = Date.now();
    expect(lateRows.find((r) => r.id === longId)).toMatchObject({ status: 'running' });
    expect(lateRows.find((r) => r.id === longId)!.lease_expires_at!).toBeGreaterThan(lateCheckedAt);
    expect(lateRows.find((r) => r.id === queuedId)).toMatchObject({ status: 'queued', started_at: null });
    expect(lateCheckedAt - sigtermAt).toBeLessThan(GRACE_MS);

    // The process leaves after the grace (not after the 10 s run).
    const exit = await within(app.exited, 8_000);
    expect(exit).not.toBeNull();
    expect(exit!.code === 0 || exit!.signal === 'SIGTERM').toBe(true);
    const exitedAfter = app.exitedAt()! - sigtermAt;
    expect(exitedAfter).toBeGreaterThanOrEqual(GRACE_MS - 100);
    expect(exitedAfter).toBeLessThan(GRACE_MS + 3000);

    const rows = readRows(file);
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
    app = await startApp(env);
    const after = await sync(slow, longId);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(INTERRUPTED);
    expect((await sync(slow, queuedId)).body).toEqual({ success: true, outputs: [{ title: 'slept', message: '200' }] });
    expect((await sync(slow, shortId)).body).toEqual({ success: true, outputs: [{ title: 'slept', message: '300' }] });
    app.child.kill('SIGTERM');
    expect(await within(app.exited, 8_000)).not.toBeNull();
  });
});

describe('crash recovery of the real process (SIGKILL, then restart)', () => {
  it('stores the plain run failed (interrupted), runs the retryInterrupted one again, charges each run once, leaves nothing running', async () => {
    const file = join(tempDir(), 'crash.sqlite');
    // Status polls count against the per-trigger limit (10/s by default); raise it so polling is never refused.
    const env = { PORT: String(await freePort()), SQLITE_PATH: file, ADMIN_TOKEN, WEBHOOK_RUN_LEASE_MS: '1000', WEBHOOK_TRIGGER_RPS: '1000' };
    let app = await startApp(env);
    const slow = await createTrigger(app, 'slow');
    const retry = await createTrigger(app, 'slow-retry');
    const creditsBefore = await credits(app);

    const plainId = await start(slow, { ms: 10_000 });
    const retryId = await start(retry, { ms: 1500 });
    expect((await status(slow, plainId)).body.invocation.status).toBe('running');
    expect((await status(retry, retryId)).body.invocation.status).toBe('running');
    const firstStart = (await status(retry, retryId)).body.invocation.startedAt as string;

    app.child.kill('SIGKILL');
    expect(await within(app.exited, 5_000)).toEqual({ code: null, signal: 'SIGKILL' });
    const killedAt = Date.now();
    // The dead process had been renewing the lease; nothing may recover the run before it runs out.
    const leaseAtKill = readRows(file).find((r) => r.id === plainId)!.lease_expires_at!;
    expect(leaseAtKill).toBeGreaterThan(killedAt - 1000);

    app = await startApp(env);
    const restartedAfter = Date.now() - killedAt;
    // Charged once per run: the crash and the second run of slow-retry cost nothing more.
    expect(await credits(app)).toBe(creditsBefore - 2);

    // The plain run: failed, "interrupted", never run again.
    const plain = await eventually('the slow run to be recovered', 5_000, async () => {
      const s = await status(slow, plainId);
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
    expect(await sync(slow, plainId)).toEqual(expect.objectContaining({ status: 200, body: INTERRUPTED }));

    // The retryInterrupted run: started again by this process, and its sync gets the outputs.
    const retried = await within(sync(retry, retryId), 8_000);
    const retriedAfter = Date.now() - killedAt;
    expect(retried).not.toBeNull();
    expect(retried!.status).toBe(200);
    expect(retried!.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '1500' }] });
    const retriedStatus = (await status(retry, retryId)).body.invocation;
    expect(Date.parse(retriedStatus.startedAt)).toBeGreaterThan(Date.parse(firstStart));
    expect(Date.parse(retriedStatus.startedAt)).toBeGreaterThanOrEqual(killedAt);
    expect(app.output()).toContain(`Run ${retryId} of bot slow-retry was interrupted; running it again (retryInterrupted)`);
    expect(app.output()).toContain(`Run ${plainId} of bot slow was interrupted; stored failed`);

    expect(await credits(app)).toBe(creditsBefore - 2);
    for (const botId of ['slow', 'slow-retry']) {
      const history = (await admin(app, 'GET', `/bots/${botId}/invocations`)).body as { status: string }[];
      expect(history.map((h) => h.status)).toEqual([botId === 'slow' ? 'failed' : 'succeeded']);
    }

    app.child.kill('SIGTERM');
    expect(await within(app.exited, 8_000)).not.toBeNull();
    const rows = readRows(file);
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
});
