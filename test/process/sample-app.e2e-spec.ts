/**
 * The sample app as a user runs it: compiled with tsc (once, by Jest's globalSetup), started as a real
 * `node` process on a free port, driven over real HTTP, stopped with SIGTERM and started again on the same
 * database.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectError, send, syncInvocation, triggerBot, type HttpResult } from '../helpers/http.js';
import {
  adminApi,
  freePort,
  killSampleApps,
  launchSampleApp,
  startSampleApp,
  stopSampleApp,
  within,
  type SampleAppProcess,
} from '../helpers/sample-app-process.js';

jest.setTimeout(30_000);

const ADMIN_TOKEN = 'sample-e2e-admin-token-5f1c2a';
const AUTH = { Authorization: `Bearer ${ADMIN_TOKEN}` };
/** Appears in bot inputs; must never show up in the app's logs. */
const INPUT_MARKER = 'input-marker-9d7e3b';

/** Triggers as the printed curl command does, then waits on the run's sync endpoint. */
async function run(t: { url: string; key: string }, inputs: unknown): Promise<{ id: string; result: HttpResult }> {
  const started = await triggerBot(t, inputs);
  expect(started.status).toBe(200);
  expect(started.body).toEqual({ success: true, invocation: { id: expect.any(String) } });
  return { id: started.body.invocation.id, result: await syncInvocation(t, started.body.invocation.id) };
}

// ---------------------------------------------------------------------------------------------------------

describe('sample app (real process)', () => {
  let dir: string;
  let env: Record<string, string>;
  let app: SampleAppProcess;

  // What the first run leaves behind, checked again after the restart.
  let demo: { url: string; key: string };
  let echoTrigger: { id: string; url: string; key: string };
  let slowTrigger: { id: string; url: string; key: string };
  let failTrigger: { id: string; url: string; key: string };
  let deletedTriggerId: string;
  const finished: { id: string; botId: string; outputs: unknown; error: unknown }[] = [];
  const shownKeys: string[] = []; // keys that only ever appeared in HTTP answers, never in the banner
  let creditsBeforeRestart: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sample-app-e2e-'));
    env = {
      PORT: String(await freePort()),
      // A folder that does not exist yet: the app creates it.
      SQLITE_PATH: join(dir, 'nested', 'data', 'sample.sqlite'),
      ADMIN_TOKEN,
      WEBHOOK_SYNC_TIMEOUT_MS: '1000',
    };
    app = await startSampleApp(env);
  }, 60_000);

  afterAll(async () => {
    await killSampleApps();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('prints the demo trigger URL, key and a curl command, and the printed key works', async () => {
    const out = app.output();
    expect(out).toContain('seeded account "demo" with 1000 credits');
    const url = /Echo trigger URL: (\S+)/.exec(out)?.[1];
    const key = /Echo trigger key: (\S+)/.exec(out)?.[1];
    expect(url).toMatch(new RegExp(`^${app.base}/webhooks/[^/]+/trigger$`));
    expect(key).toMatch(/^whk_/);
    expect(out).toContain(`curl -X POST ${url} -H 'X-Key: ${key}' -H 'Content-Type: application/json' -d '{"text":"hello"}'`);
    demo = { url: url!, key: key! };

    const { id, result } = await run(demo, { text: 'hello' });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ success: true, outputs: [{ title: 'text', message: 'hello' }] });
    finished.push({ id, botId: 'echo', outputs: result.body.outputs, error: null });
  });

  it('answers 401 on every admin endpoint without the right bearer token', async () => {
    const endpoints: [string, string][] = [
      ['GET', '/bots'],
      ['POST', '/bots/echo/triggers'],
      ['GET', '/bots/echo/triggers'],
      ['GET', '/triggers/trg_x'],
      ['POST', '/triggers/trg_x/rotate-key'],
      ['DELETE', '/triggers/trg_x'],
      ['GET', '/bots/echo/invocations'],
      ['GET', '/accounts/demo'],
      ['PUT', '/accounts/demo/credits'],
    ];
    for (const [method, path] of endpoints) {
      const url = `${app.base}/admin/api${path}`;
      const json = method === 'POST' || method === 'PUT' ? { name: 'x', credits: 5 } : undefined;
      expectError(await send(method, url, { json }), 401);
      expectError(await send(method, url, { json, headers: { Authorization: 'Bearer wrong-token' } }), 401);
      expectError(await send(method, url, { json, headers: { Authorization: ADMIN_TOKEN } }), 401); // no "Bearer"
    }
    // Nothing was changed by those calls.
    expect((await adminApi(app, 'GET', '/accounts/demo')).body.credits).toBe(999);
  });

  it('lists the bots', async () => {
    const bots = await adminApi(app, 'GET', '/bots');
    expect(bots.status).toBe(200);
    expect(bots.body).toEqual([
      { id: 'echo', name: 'Echo', accountId: 'demo' },
      { id: 'slow', name: 'Slow', accountId: 'demo' },
      { id: 'fail', name: 'Fail', accountId: 'demo' },
      { id: 'slow-retry', name: 'Slow (retried when interrupted)', accountId: 'demo' },
      { id: 'stream', name: 'Stream', accountId: 'demo' },
    ]);
  });

  it('creates, lists and views triggers, with 404 for unknown ids and 400 for bad bodies', async () => {
    const created = await adminApi(app, 'POST', '/bots/echo/triggers', { name: 'My echo', type: 'webhook' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^trg_/),
      name: 'My echo',
      type: 'webhook',
      botId: 'echo',
      url: expect.any(String),
      key: expect.stringMatching(/^whk_/),
    });
    expect(created.body.url).toBe(`${app.base}/webhooks/${created.body.id}/trigger`);
    echoTrigger = created.body;
    shownKeys.push(created.body.key);

    const list = await adminApi(app, 'GET', '/bots/echo/triggers');
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(2); // the demo trigger and this one, oldest first
    expect(list.body[0].url).toBe(demo.url);
    expect(list.body[1]).toEqual({
      id: echoTrigger.id,
      name: 'My echo',
      type: 'webhook',
      url: echoTrigger.url,
      createdAt: expect.any(String),
    });
    expect(Number.isNaN(Date.parse(list.body[1].createdAt))).toBe(false);
    for (const t of list.body) expect(t).not.toHaveProperty('key');

    const viewed = await adminApi(app, 'GET', `/triggers/${echoTrigger.id}`);
    expect(viewed.status).toBe(200);
    expect(viewed.body).toEqual({
      id: echoTrigger.id,
      name: 'My echo',
      type: 'webhook',
      botId: 'echo',
      url: echoTrigger.url,
      key: echoTrigger.key,
    });

    expectError(await adminApi(app, 'POST', '/bots/nope/triggers', { name: 'x', type: 'webhook' }), 404);
    expectError(await adminApi(app, 'GET', '/bots/nope/triggers'), 404);
    expectError(await adminApi(app, 'GET', '/triggers/trg_doesnotexist0000'), 404);
    for (const bad of [{}, { name: '' }, { name: '   ' }, { name: 42, type: 'webhook' }, { name: 'x', type: 'email' }, ['x'], 'x']) {
      expectError(await adminApi(app, 'POST', '/bots/echo/triggers', bad), 400);
    }
    expectError(await send('POST', `${app.base}/admin/api/bots/echo/triggers`, { headers: AUTH, raw: '{"name":' }), 400);
    expect((await adminApi(app, 'GET', '/bots/echo/triggers')).body).toHaveLength(2);

    slowTrigger = (await adminApi(app, 'POST', '/bots/slow/triggers', { name: 'Slow one', type: 'webhook' })).body;
    failTrigger = (await adminApi(app, 'POST', '/bots/fail/triggers', { name: 'Failing', type: 'webhook' })).body;
    expect(slowTrigger.key).toMatch(/^whk_/);
    expect(failTrigger.key).toMatch(/^whk_/);
    shownKeys.push(slowTrigger.key, failTrigger.key);
  });

  it('runs the echo bot through a new trigger: one output per input property', async () => {
    const { id, result } = await run(echoTrigger, { text: 'hi', n: 3, obj: { a: [1, 2] }, secret: INPUT_MARKER });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      success: true,
      outputs: [
        { title: 'text', message: 'hi' },
        { title: 'n', message: '3' },
        { title: 'obj', message: '{"a":[1,2]}' },
        { title: 'secret', message: INPUT_MARKER },
      ],
    });
    finished.push({ id, botId: 'echo', outputs: result.body.outputs, error: null });

    expectError(await triggerBot({ url: echoTrigger.url, key: demo.key }, { text: 'x' }), 401); // another trigger's key
    expectError(await triggerBot({ url: `${app.base}/webhooks/trg_doesnotexist0000/trigger`, key: echoTrigger.key }, { text: 'x' }), 404);
  });

  it('runs the slow bot: sync answers 408 after WEBHOOK_SYNC_TIMEOUT_MS, and a retry gets the outputs', async () => {
    const started = await triggerBot(slowTrigger, { ms: 1600 });
    expect(started.status).toBe(200);
    const id = started.body.invocation.id;
    const t0 = Date.now();
    expectError(await syncInvocation(slowTrigger, id), 408);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    const retry = await syncInvocation(slowTrigger, id);
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '1600' }] });
    finished.push({ id, botId: 'slow', outputs: retry.body.outputs, error: null });

    const quick = await run(slowTrigger, { ms: 50 });
    expect(quick.result.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '50' }] });
    finished.push({ id: quick.id, botId: 'slow', outputs: quick.result.body.outputs, error: null });
  });

  it('runs the fail bot: 200 with success false, no outputs and the error message', async () => {
    const boom = await run(failTrigger, { message: 'boom' });
    expect(boom.result.status).toBe(200);
    expect(boom.result.body).toEqual({ success: false, status: 'failed', outputs: [], error: { message: 'boom' } });
    finished.push({ id: boom.id, botId: 'fail', outputs: null, error: { message: 'boom' } });

    const plain = await run(failTrigger, {});
    expect(plain.result.body).toEqual({ success: false, status: 'failed', outputs: [], error: { message: 'bot failed' } });
    finished.push({ id: plain.id, botId: 'fail', outputs: null, error: { message: 'bot failed' } });
  });

  it('rotates a key: the old key gets 401 at once, the new one works and is what View shows', async () => {
    const oldKey = echoTrigger.key;
    const rotated = await adminApi(app, 'POST', `/triggers/${echoTrigger.id}/rotate-key`);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ id: echoTrigger.id, url: echoTrigger.url, key: expect.stringMatching(/^whk_/) });
    expect(rotated.body.key).not.toBe(oldKey);
    echoTrigger = { ...echoTrigger, key: rotated.body.key };
    shownKeys.push(rotated.body.key);

    expectError(await triggerBot({ url: echoTrigger.url, key: oldKey }, { text: 'old' }), 401);
    const { id, result } = await run(echoTrigger, { text: 'new key' });
    expect(result.body).toEqual({ success: true, outputs: [{ title: 'text', message: 'new key' }] });
    finished.push({ id, botId: 'echo', outputs: result.body.outputs, error: null });
    expect((await adminApi(app, 'GET', `/triggers/${echoTrigger.id}`)).body.key).toBe(echoTrigger.key);

    expectError(await adminApi(app, 'POST', '/triggers/trg_doesnotexist0000/rotate-key'), 404);
  });

  it('deletes a trigger: 204, then its URL, View and a second delete answer 404', async () => {
    const t = (await adminApi(app, 'POST', '/bots/echo/triggers', { name: 'Short-lived', type: 'webhook' })).body;
    shownKeys.push(t.key);
    const deleted = await adminApi(app, 'DELETE', `/triggers/${t.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBe('');
    expectError(await triggerBot(t, { text: 'x' }), 404);
    expectError(await adminApi(app, 'GET', `/triggers/${t.id}`), 404);
    expectError(await adminApi(app, 'DELETE', `/triggers/${t.id}`), 404);
    expect((await adminApi(app, 'GET', '/bots/echo/triggers')).body.map((x: { id: string }) => x.id)).not.toContain(t.id);
    deletedTriggerId = t.id;
  });

  it('reads and sets credits; each run costs one; an empty account gets 402', async () => {
    const before = await adminApi(app, 'GET', '/accounts/demo');
    expect(before.status).toBe(200);
    expect(before.body).toEqual({ id: 'demo', credits: 1000 - finished.length });

    const set = await adminApi(app, 'PUT', '/accounts/demo/credits', { credits: 42 });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ id: 'demo', credits: 42 });
    const { id, result } = await run(echoTrigger, { text: 'costs one' });
    expect(result.body.success).toBe(true);
    finished.push({ id, botId: 'echo', outputs: result.body.outputs, error: null });
    expect((await adminApi(app, 'GET', '/accounts/demo')).body).toEqual({ id: 'demo', credits: 41 });

    expect((await adminApi(app, 'PUT', '/accounts/demo/credits', { credits: 0 })).status).toBe(200);
    expectError(await triggerBot(echoTrigger, { text: 'no credits' }), 402);

    for (const bad of [{ credits: -1 }, { credits: 1.5 }, { credits: '10' }, { credits: null }, {}, [5]]) {
      expectError(await adminApi(app, 'PUT', '/accounts/demo/credits', bad), 400);
    }
    expect((await adminApi(app, 'GET', '/accounts/demo')).body).toEqual({ id: 'demo', credits: 0 });
    expectError(await adminApi(app, 'GET', '/accounts/nobody'), 404);

    expect((await adminApi(app, 'PUT', '/accounts/demo/credits', { credits: 500 })).body).toEqual({ id: 'demo', credits: 500 });
    creditsBeforeRestart = 500;
  });

  it('shows each bot’s history newest first, with outputs or the error', async () => {
    for (const botId of ['echo', 'slow', 'fail']) {
      const history = await adminApi(app, 'GET', `/bots/${botId}/invocations`);
      expect(history.status).toBe(200);
      const expected = finished.filter((f) => f.botId === botId).reverse(); // newest first
      expect(history.body.map((h: { id: string }) => h.id)).toEqual(expected.map((f) => f.id));
      for (const [i, h] of (history.body as Record<string, unknown>[]).entries()) {
        expect(Object.keys(h).sort()).toEqual([
          'createdAt',
          'durationMs',
          'error',
          'finishedAt',
          'id',
          'outputs',
          'startedAt',
          'status',
          'triggerId',
        ]);
        expect(h.status).toBe(botId === 'fail' ? 'failed' : 'succeeded');
        expect(h.finishedAt).toEqual(expect.any(String));
        // duration = finishedAt − startedAt, as stored
        expect(h.durationMs).toBe(Date.parse(h.finishedAt as string) - Date.parse(h.startedAt as string));
        // a slow run lasts at least the ms it slept (its output says how long)
        if (botId === 'slow') expect(h.durationMs).toBeGreaterThanOrEqual(Number((h.outputs as { message: string }[])[0].message) - 5);
        if (botId === 'fail') expect(h.error).toEqual(expect.objectContaining(expected[i].error as object));
        else expect(h.outputs).toEqual(expected[i].outputs);
      }
      const times = history.body.map((h: { createdAt: string }) => Date.parse(h.createdAt));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
    }
    const latest = (await adminApi(app, 'GET', '/bots/echo/invocations?limit=1')).body;
    expect(latest).toHaveLength(1);
    expect(latest[0].outputs).toEqual([{ title: 'text', message: 'costs one' }]);
    expectError(await adminApi(app, 'GET', '/bots/echo/invocations?limit=0'), 400);
    expectError(await adminApi(app, 'GET', '/bots/nope/invocations'), 404);
  });

  it('serves /openapi.json (OpenAPI 3.0.3, version 1.0.0, triggerBot, X-Key) and Swagger UI at /docs', async () => {
    const doc = await send('GET', `${app.base}/openapi.json`);
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.0.3');
    expect(doc.body.info.version).toBe('1.0.0');
    expect(doc.body.paths['/webhooks/{triggerId}/trigger'].post.operationId).toBe('triggerBot');
    expect(doc.body.paths['/webhooks/{triggerId}/trigger/invocation/{invocationId}/sync'].get).toBeDefined();
    expect(doc.body.components.securitySchemes['X-Key']).toEqual(expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Key' }));
    expect(Object.keys(doc.body.paths).some((p) => p.startsWith('/admin'))).toBe(false);

    const docs = await fetch(`${app.base}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-type')).toContain('text/html');
    expect(await docs.text()).toContain('swagger');
  });

  it('serves the admin page', async () => {
    const page = await fetch(`${app.base}/admin`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    expect(html).toContain('Admin token');
    expect(html).toContain('/admin/api');
  });

  it('logs invocation events, but never inputs or keys it did not print itself', () => {
    const out = app.output();
    for (const f of finished) expect(out).toContain(f.id);
    expect(out).toMatch(/succeeded/);
    expect(out).toMatch(/failed/);
    expect(out).not.toContain(INPUT_MARKER);
    for (const key of shownKeys) expect(out).not.toContain(key);
    expect(out).not.toContain(ADMIN_TOKEN);
  });

  it('keeps triggers, keys, finished runs and credits across SIGTERM and a restart, without seeding again', async () => {
    const stopped = await stopSampleApp(app);
    expect(stopped.code === 0 || stopped.signal === 'SIGTERM').toBe(true);

    app = await startSampleApp({ ...env, WEBHOOK_TRIGGER_RPS: '3' });
    const out = app.output();
    expect(out).not.toContain('seeded account');
    expect(out).toContain('not seeded again');
    expect(out).toContain(`Echo trigger URL: ${demo.url}`);
    expect(out).toContain(`Echo trigger key: ${demo.key}`);

    expect((await adminApi(app, 'GET', '/accounts/demo')).body).toEqual({ id: 'demo', credits: creditsBeforeRestart });

    const echoIds = (await adminApi(app, 'GET', '/bots/echo/triggers')).body.map((t: { id: string }) => t.id);
    expect(echoIds).toContain(echoTrigger.id);
    expect(echoIds).not.toContain(deletedTriggerId);
    expectError(await adminApi(app, 'GET', `/triggers/${deletedTriggerId}`), 404);
    for (const t of [echoTrigger, slowTrigger, failTrigger]) {
      expect((await adminApi(app, 'GET', `/triggers/${t.id}`)).body).toEqual(expect.objectContaining({ id: t.id, url: t.url, key: t.key }));
    }

    for (const botId of ['echo', 'slow', 'fail']) {
      const history = (await adminApi(app, 'GET', `/bots/${botId}/invocations`)).body as {
        id: string;
        outputs: unknown;
        error: unknown;
        finishedAt: string;
      }[];
      for (const f of finished.filter((x) => x.botId === botId)) {
        const h = history.find((x) => x.id === f.id);
        expect(h).toBeDefined();
        expect(h!.finishedAt).toEqual(expect.any(String));
        if (botId === 'fail') expect(h!.error).toEqual(expect.objectContaining(f.error as object));
        else expect(h!.outputs).toEqual(f.outputs);
      }
    }

    // The rotated key still works, and the run is charged.
    const { result } = await run(echoTrigger, { text: 'after restart' });
    expect(result.body).toEqual({ success: true, outputs: [{ title: 'text', message: 'after restart' }] });
    expect((await adminApi(app, 'GET', '/accounts/demo')).body.credits).toBe(creditsBeforeRestart - 1);
  });

  it('applies WEBHOOK_TRIGGER_RPS per trigger: the request past the limit gets 429', async () => {
    const t = (await adminApi(app, 'POST', '/bots/echo/triggers', { name: 'Rate limited', type: 'webhook' })).body;
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await triggerBot(t, { i })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('refuses to start with an invalid environment value, naming the variable', async () => {
    const invalid = [
      ['PORT', 'abc'],
      ['WEBHOOK_TRIGGER_RPS', '0'],
      ['WEBHOOK_SYNC_TIMEOUT_MS', 'soon'],
      ['PUBLIC_BASE_URL', 'not a url'],
      ['WEBHOOK_MAX_CONCURRENT_RUNS', '0'],
      ['WEBHOOK_MAX_CONCURRENT_RUNS_PER_ACCOUNT', '0'],
      ['WEBHOOK_SHUTDOWN_GRACE_MS', '-1'],
      ['WEBHOOK_BOT_TIMEOUT_MS', '1.5'],
      ['WEBHOOK_RUN_LEASE_MS', 'forever'],
    ];
    for (const [name, value] of invalid) {
      const bad = launchSampleApp({ ...env, PORT: String(await freePort()), SQLITE_PATH: ':memory:', [name]: value });
      const result = await within(bad.exited, 15_000);
      expect(result).toEqual({ code: 1, signal: null });
      expect(bad.output()).toContain(`Invalid configuration: ${name}`);
    }
  });
});
