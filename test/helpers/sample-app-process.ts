/**
 * The sample app as a user runs it: its compiled entry points (built once per Jest run by
 * test/global-setup.ts, as `npm start` builds them) started as real `node` processes with only the
 * environment a test gives them, waited for, signalled and read.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import Redis from 'ioredis';
import { Client } from 'pg';
import { SAMPLE_APP_ENTRIES } from '../global-setup.js';
import { send, sleep, type HttpResult } from './http.js';
import { createScratchDatabase, deleteRedisKeys } from './services.js';

const ROOT = resolve(__dirname, '../..');

/** `main` (the HTTP app, `npm start`) or `worker` (`npm run start:worker`). */
export type SampleAppEntry = keyof typeof SAMPLE_APP_ENTRIES;

/** Every variable the sample app reads: cleared from the inherited environment, so only a test's own apply. */
const SAMPLE_APP_VARIABLES = [
  'PORT',
  'SQLITE_PATH',
  'DATABASE_URL',
  'REDIS_URL',
  'REDIS_KEY_PREFIX',
  'PUBLIC_BASE_URL',
  'ADMIN_TOKEN',
  'WEBHOOK_ROLE',
  'WEBHOOK_SYNC_TIMEOUT_MS',
  'WEBHOOK_TRIGGER_RPS',
  'WEBHOOK_ACCOUNT_RPM',
  'WEBHOOK_KEY_SECRET',
  'WEBHOOK_MAX_CONCURRENT_RUNS',
  'WEBHOOK_MAX_CONCURRENT_RUNS_PER_ACCOUNT',
  'WEBHOOK_SHUTDOWN_GRACE_MS',
  'WEBHOOK_BOT_TIMEOUT_MS',
  'WEBHOOK_RUN_LEASE_MS',
  'WEBHOOK_MAX_RUN_ATTEMPTS',
  'WEBHOOK_CALLBACK_ALLOWED_HOSTS',
  'WEBHOOK_CALLBACK_RETRY_MS',
  'WEBHOOK_CALLBACK_TIMEOUT_MS',
];

/** How long a process may take to be ready (it exits 1 at once on a bad setting). */
const READY_TIMEOUT_MS = 20_000;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SampleAppProcess {
  child: ChildProcess;
  /** `http://localhost:<PORT>`: where the app says it is (its printed and issued URLs use it too). */
  base: string;
  /** The variables it was started with, on top of a copy of this process's environment without the app's own. */
  env: Record<string, string>;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  exited: Promise<Exit>;
  /** Date.now() when it exited. */
  exitedAt(): number | undefined;
}

const running = new Set<SampleAppProcess>();

/** Starts `node <entry>` and returns at once (e.g. for a process expected to exit on a bad setting). */
export function launchSampleApp(env: Record<string, string>, entry: SampleAppEntry = 'main'): SampleAppProcess {
  const script = SAMPLE_APP_ENTRIES[entry];
  if (!existsSync(script)) {
    throw new Error(
      `${script} is missing: the sample app is built by Jest's globalSetup (test/global-setup.ts), or by npm run build:sample`,
    );
  }
  const inherited: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const name of SAMPLE_APP_VARIABLES) delete inherited[name];
  const child = spawn(process.execPath, [script], { cwd: ROOT, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let exitedAt: number | undefined;
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const app: SampleAppProcess = {
    child,
    base: `http://localhost:${env.PORT}`,
    env,
    output: () => out,
    exitedAt: () => exitedAt,
    exited: new Promise<Exit>((done) =>
      child.on('exit', (code, signal) => {
        exitedAt = Date.now();
        running.delete(app);
        done({ code, signal });
      }),
    ),
  };
  running.add(app);
  return app;
}

/**
 * Starts `node <entry>` and waits until it is ready: the HTTP app once /admin/sign-in answers and its banner (printed
 * after listen) is out; a worker, which has no HTTP server, once it printed its banner.
 */
export async function startSampleApp(env: Record<string, string>, entry: SampleAppEntry = 'main'): Promise<SampleAppProcess> {
  const app = launchSampleApp(env, entry);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (app.exitedAt() !== undefined) throw new Error(`The sample app (${entry}) exited early:\n${app.output()}`);
    if (entry === 'worker') {
      if (app.output().includes('Webhook Triggers worker')) return app;
    } else {
      const ok = await fetch(`${app.base}/admin/sign-in`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok && /Echo trigger|echo bot has no trigger/.test(app.output())) return app;
    }
    await sleep(50);
  }
  throw new Error(`The sample app (${entry}) was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${app.output()}`);
}

/** Sends `signal` and waits for the process to exit; fails, with its output, if it is still running after `timeoutMs`. */
export async function stopSampleApp(app: SampleAppProcess, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<Exit> {
  app.child.kill(signal);
  const exit = await within(app.exited, timeoutMs);
  if (!exit) throw new Error(`The sample app did not exit within ${timeoutMs} ms of ${signal}:\n${app.output()}`);
  return exit;
}

/** SIGKILLs every sample-app process of this suite still running and waits for them to exit (afterAll). */
export async function killSampleApps(): Promise<void> {
  const left = [...running];
  for (const app of left) app.child.kill('SIGKILL');
  await Promise.all(left.map((app) => app.exited));
}

/** A call to the sample app's admin API (/admin/api…) with the bearer token the process was started with. */
export function adminApi(app: Pick<SampleAppProcess, 'base' | 'env'>, method: string, path: string, json?: unknown): Promise<HttpResult> {
  return send(method, `${app.base}/admin/api${path}`, { headers: { Authorization: `Bearer ${app.env.ADMIN_TOKEN}` }, json });
}

/** The promise's value, or null after `ms` (the timer is cleared either way, so Jest can exit). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A TCP port that was free a moment ago, for a child process to listen on. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/** What a suite of sample-app processes on PostgreSQL and Redis reads its results from (`openProcessServices`). */
export interface ProcessServices {
  /** The scratch database the processes share (`DATABASE_URL`). */
  dbUrl: string;
  /** A client on that database, connected. */
  pg: Client;
  /** A client on the suite's Redis. */
  redis: Redis;
  /** Kills the suite's sample apps first, then closes the clients, drops the database and the suite's Redis keys. */
  close(): Promise<void>;
}

/** A scratch database with a client on it, and a Redis client, for a suite whose processes use `keyPrefix`. */
export async function openProcessServices(postgresUrl: string, redisUrl: string, keyPrefix: string): Promise<ProcessServices> {
  const db = await createScratchDatabase(postgresUrl);
  const pg = new Client({ connectionString: db.url });
  await pg.connect();
  const redis = new Redis(redisUrl);
  return {
    dbUrl: db.url,
    pg,
    redis,
    close: async () => {
      await killSampleApps();
      redis.disconnect();
      await pg.end();
      await db.drop();
      await deleteRedisKeys(redisUrl, keyPrefix);
    },
  };
}
