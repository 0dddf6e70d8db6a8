/**
 * The sample app scaled out: TWO real `node` processes on one PostgreSQL database (DATABASE_URL) and one
 * Redis (REDIS_URL, with a per-run REDIS_KEY_PREFIX), started at the same time. A sync on node 2 answers
 * for a run started through node 1, and the per-trigger rate limit holds across both nodes together.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import { sleep } from './helpers/http.js';
import { freePort } from './helpers/process.js';
import { createScratchDatabase, serviceUrl } from './helpers/services.js';

jest.setTimeout(30_000);

const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');
const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');

const ROOT = resolve(__dirname, '..');
const MAIN = join(ROOT, 'sample-app/dist/sample-app/src/main.js');
const ADMIN_TOKEN = 'scaleout-e2e-admin-token-7c3d1e';
const AUTH = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const KEY_SECRET = `scaleout-e2e-key-secret-${randomBytes(8).toString('hex')}`;
const keyPrefix = `webhook-test:${randomBytes(6).toString('hex')}:`;
/** Variables the sample app reads; cleared from the inherited environment so only ours apply. */
const ENV_VARS = ['PORT', 'SQLITE_PATH', 'DATABASE_URL', 'REDIS_URL', 'REDIS_KEY_PREFIX', 'PUBLIC_BASE_URL', 'ADMIN_TOKEN', 'WEBHOOK_SYNC_TIMEOUT_MS', 'WEBHOOK_TRIGGER_RPS',
  'WEBHOOK_ACCOUNT_RPM', 'WEBHOOK_KEY_SECRET', 'WEBHOOK_MAX_CONCURRENT_RUNS', 'WEBHOOK_SHUTDOWN_GRACE_MS', 'WEBHOOK_BOT_TIMEOUT_MS', 'WEBHOOK_RUN_LEASE_MS'];

interface Node {
  child: ChildProcess;
  base: string;
  output: () => string;
  exited: Promise<unknown>;
}

const children = new Set<ChildProcess>();

function launch(env: Record<string, string>): Node {
  const inherited: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const name of ENV_VARS) delete inherited[name];
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise((done) => child.on('exit', (code, signal) => (children.delete(child), done({ code, signal }))));
  return { child, base: `http://localhost:${env.PORT}`, output: () => out, exited };
}

async function ready(node: Node): Promise<void> {
  let exited = false;
  void node.exited.then(() => (exited = true));
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`A sample app process exited early:\n${node.output()}`);
    const ok = await fetch(`${node.base}/admin`).then((r) => r.ok, () => false);
    if (ok && /Echo trigger|echo bot has no trigger/.test(node.output())) return;
    await sleep(100);
  }
  throw new Error(`A sample app process did not answer within 20 s:\n${node.output()}`);
}

async function http(method: string, url: string, headers: Record<string, string> = {}, json?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method,
    headers: json === undefined ? headers : { ...headers, 'Content-Type': 'application/json' },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.text();
  return { status: res.status, body: (res.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : text };
}

const admin = (node: Node, method: string, path: string, json?: unknown) => http(method, `${node.base}/admin/api${path}`, AUTH, json);
/** A trigger's URL as served by `node` (every node serves every trigger). */
const on = (node: Node, triggerId: string) => `${node.base}/webhooks/${triggerId}`;

async function deleteRunKeys(): Promise<void> {
  const redis = new Redis(redisUrl!);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    await redis.quit();
  }
}

if (!postgresUrl || !redisUrl) {
  it.todo('sample app scale-out suite NOT RUN: set WEBHOOK_TEST_POSTGRES_URL=postgres://… and WEBHOOK_TEST_REDIS_URL=redis://…');
} else {
  describe('sample app scaled out: two processes, one PostgreSQL, one Redis', () => {
    let db: { url: string; drop: () => Promise<void> };
    let node1: Node;
    let node2: Node;

    beforeAll(async () => {
      execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'sample-app/tsconfig.json'], { cwd: ROOT, stdio: 'pipe' });
      expect(existsSync(MAIN)).toBe(true);
      db = await createScratchDatabase(postgresUrl);
      const shared = { DATABASE_URL: db.url, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: keyPrefix, ADMIN_TOKEN, WEBHOOK_KEY_SECRET: KEY_SECRET };
      const [port1, port2] = [await freePort(), await freePort()];
      // Both at once on an empty database: migrations and seeding must not race.
      node1 = launch({ ...shared, PORT: String(port1) });
      node2 = launch({ ...shared, PORT: String(port2 === port1 ? await freePort() : port2) });
      await Promise.all([ready(node1), ready(node2)]);
    }, 60_000);

    afterAll(async () => {
      const exits = [...children].map((child) => new Promise((done) => child.once('exit', done)));
      for (const child of children) child.kill('SIGKILL');
      await Promise.all(exits);
      await db?.drop();
      await deleteRunKeys();
    });

    it('seeds the demo data exactly once although both processes started together', async () => {
      const seeded = [node1, node2].filter((n) => n.output().includes('seeded account "demo" with 1000 credits'));
      expect(seeded).toHaveLength(1);
      for (const n of [node1, node2]) expect(n.output()).toContain('Redis:');
      const echo = await admin(node2, 'GET', '/bots/echo/triggers');
      expect(echo.status).toBe(200);
      expect(echo.body).toHaveLength(1);
      expect((await admin(node1, 'GET', '/accounts/demo')).body.credits).toBe(1000);
    });

    it('a slow run started through node 1 is answered by a sync on node 2', async () => {
      const created = await admin(node1, 'POST', '/bots/slow/triggers', { name: 'Scale-out slow', type: 'webhook' });
      expect(created.status).toBe(201);
      const { id, key } = created.body as { id: string; key: string };
      const started = await http('POST', `${on(node1, id)}/trigger`, { 'X-Key': key }, { ms: 300 });
      expect(started.status).toBe(200);
      const invocationId = started.body.invocation.id as string;
      const t0 = Date.now();
      const synced = await http('GET', `${on(node2, id)}/trigger/invocation/${invocationId}/sync`, { 'X-Key': key });
      expect(synced.status).toBe(200);
      expect(synced.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '300' }] });
      expect(Date.now() - t0).toBeLessThan(5_000);
    });

    it('15 requests at once on one trigger over both nodes: exactly 10 × 200 and 5 × 429 (WEBHOOK_TRIGGER_RPS=10)', async () => {
      const created = await admin(node1, 'POST', '/bots/echo/triggers', { name: 'Scale-out burst', type: 'webhook' });
      expect(created.status).toBe(201);
      const { id, key } = created.body as { id: string; key: string };
      const replies = await Promise.all(
        Array.from({ length: 15 }, (_, i) => http('POST', `${on(i % 2 === 0 ? node1 : node2, id)}/trigger`, { 'X-Key': key }, { n: String(i) })),
      );
      const statuses = replies.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    });

    it('exits 1 naming the variable on a bad DATABASE_URL, REDIS_URL or REDIS_KEY_PREFIX, and without WEBHOOK_KEY_SECRET beside DATABASE_URL', async () => {
      const cases: [Record<string, string>, RegExp][] = [
        [{ DATABASE_URL: 'mysql://root@127.0.0.1/x', WEBHOOK_KEY_SECRET: KEY_SECRET }, /Invalid configuration: DATABASE_URL must be/],
        [{ DATABASE_URL: 'not a url', WEBHOOK_KEY_SECRET: KEY_SECRET }, /Invalid configuration: DATABASE_URL must be/],
        [{ REDIS_URL: 'http://127.0.0.1:6379' }, /Invalid configuration: REDIS_URL must be/],
        [{ REDIS_URL: redisUrl, REDIS_KEY_PREFIX: 'a b' }, /Invalid configuration: REDIS_KEY_PREFIX must not/],
        [{ DATABASE_URL: db.url }, /Invalid configuration: WEBHOOK_KEY_SECRET must be set when DATABASE_URL is set/],
      ];
      for (const [env, message] of cases) {
        const node = launch({ ...env, PORT: String(await freePort()), SQLITE_PATH: ':memory:' });
        expect(await node.exited).toEqual({ code: 1, signal: null });
        expect(node.output()).toMatch(message);
        expect(node.output()).not.toContain('root@'); // the value (it may hold a password) is not echoed
      }
    });

    it('credits read through either node agree', async () => {
      // 1000 seeded, minus the slow run and the 10 accepted echo runs (the 429s cost nothing).
      const deadline = Date.now() + 5_000;
      let seen: unknown[] = [];
      while (Date.now() < deadline) {
        const replies = await Promise.all([admin(node1, 'GET', '/accounts/demo'), admin(node2, 'GET', '/accounts/demo')]);
        seen = replies.map((r) => r.body);
        if (replies.every((r) => r.status === 200 && r.body.credits === 989)) break;
        await sleep(100);
      }
      expect(seen).toEqual([{ id: 'demo', credits: 989 }, { id: 'demo', credits: 989 }]);
    });
  });
}
