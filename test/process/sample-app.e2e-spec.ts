/**
 * The sample app as a user runs it: compiled with tsc (once, by Jest's globalSetup), started as a real
 * `node` process on a free port, driven over real HTTP, stopped with SIGTERM and started again on the same
 * database.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  expectAdminError,
  expectError,
  ISO,
  rawRequest,
  send,
  syncInvocation,
  triggerBot,
  type HttpResult,
  type RawResult,
} from '../helpers/http.js';
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
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const SIGN_IN_CSP = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/** Loopback source addresses, one per client in the wrong-token tests (the limit counts per client IP). */
const ADDRESSES = { wrongOnce: '127.0.0.21', rightToken: '127.0.0.22', limited: '127.0.0.23', forged: '127.0.0.24' };
/** Appears in bot inputs; must never show up in the app's logs. */
const INPUT_MARKER = 'input-marker-9d7e3b';

/** The app's URL on 127.0.0.1 (it listens on every address), for requests from a chosen loopback source address. */
const loopback = (app: SampleAppProcess) => app.base.replace('localhost', '127.0.0.1');

/** A session value as the sample app signs it: `v1.<issuedAtMs>.<HMAC-SHA256(token, "v1."+issuedAtMs), base64url>`. */
const session = (token: string, issuedAt: number) =>
  `v1.${issuedAt}.${createHmac('sha256', token).update(`v1.${issuedAt}`).digest('base64url')}`;

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

  /** Posts the sign-in form from `localAddress`, as a browser does. */
  const signInFrom = (localAddress: string, token: string): Promise<RawResult> =>
    rawRequest(`${loopback(app)}/admin/sign-in`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
      localAddress,
    });

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
    // The banner names every bot the demo account owns, as the app registered them.
    const bots = (await send('GET', `${app.base}/admin/api/bots`, { headers: AUTH })).body as Array<{ id: string; accountId: string }>;
    const owned = bots.filter((b) => b.accountId === 'demo').map((b) => b.id);
    expect(owned).toContain('stream');
    expect(out).toContain(`owning bots ${owned.slice(0, -1).join(', ')} and ${owned[owned.length - 1]}.`);

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
      expectAdminError(await send(method, url, { json }), 401);
      expectAdminError(await send(method, url, { json, headers: { Authorization: 'Bearer wrong-token' } }), 401);
      expectAdminError(await send(method, url, { json, headers: { Authorization: ADMIN_TOKEN } }), 401); // no "Bearer"
    }
    // Nothing was changed by those calls.
    expect((await adminApi(app, 'GET', '/accounts/demo')).body.credits).toBe(999);
  });

  it('lists the bots', async () => {
    const bots = await adminApi(app, 'GET', '/bots');
    expect(bots.status).toBe(200);
    // One run (the demo trigger's) so far, 999 credits left.
    const bot = (id: string, name: string, triggers: number, runsLast24h: number) => ({
      id,
      name,
      accountId: 'demo',
      creditsPerRun: 1,
      accountCredits: 999,
      triggers,
      runsLast24h,
    });
    expect(bots.body).toEqual([
      bot('echo', 'Echo', 1, 1),
      bot('slow', 'Slow', 0, 0),
      bot('fail', 'Fail', 0, 0),
      bot('slow-retry', 'Slow (retried when interrupted)', 0, 0),
      bot('stream', 'Stream', 0, 0),
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
      createdAt: ISO,
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
      createdAt: created.body.createdAt,
      lastUsedAt: null,
    });
    expect(list.body[0].lastUsedAt).toEqual(ISO); // the demo trigger ran in the first test
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
      createdAt: created.body.createdAt,
      allowedIps: [],
      callback: null,
    });

    expectAdminError(await adminApi(app, 'POST', '/bots/nope/triggers', { name: 'x', type: 'webhook' }), 404);
    expectAdminError(await adminApi(app, 'GET', '/bots/nope/triggers'), 404);
    expectAdminError(await adminApi(app, 'GET', '/triggers/trg_doesnotexist0000'), 404);
    for (const bad of [{}, { name: '' }, { name: '   ' }, { name: 42, type: 'webhook' }, { name: 'x', type: 'email' }, ['x'], 'x']) {
      expectAdminError(await adminApi(app, 'POST', '/bots/echo/triggers', bad), 400);
    }
    expectAdminError(await send('POST', `${app.base}/admin/api/bots/echo/triggers`, { headers: AUTH, raw: '{"name":' }), 400);
    expect((await adminApi(app, 'GET', '/bots/echo/triggers')).body).toHaveLength(2);
    // The sample app's guard names who it let in: the audit log records it.
    const audited = await adminApi(app, 'GET', '/audit-log?action=trigger.created');
    expect(audited.body.entries[0]).toMatchObject({ action: 'trigger.created', triggerId: echoTrigger.id, principal: 'admin (token)' });

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

  it('rotates a key: the old key works through the grace and gets 401 once revoked; the new one works and is what View shows', async () => {
    const oldKey = echoTrigger.key;
    const rotated = await adminApi(app, 'POST', `/triggers/${echoTrigger.id}/rotate-key`);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({
      id: echoTrigger.id,
      url: echoTrigger.url,
      key: expect.stringMatching(/^whk_/),
      keyId: expect.stringMatching(/^key_/),
      graceEndsAt: expect.any(String),
    });
    expect(rotated.body.key).not.toBe(oldKey);
    echoTrigger = { ...echoTrigger, key: rotated.body.key };
    shownKeys.push(rotated.body.key);

    const keys = await adminApi(app, 'GET', `/triggers/${echoTrigger.id}/keys`);
    expect(keys.body[0]).toMatchObject({ expiresAt: rotated.body.graceEndsAt, inGrace: true });
    expect((await adminApi(app, 'DELETE', `/triggers/${echoTrigger.id}/keys/${keys.body[0].id}`)).status).toBe(204);
    expectError(await triggerBot({ url: echoTrigger.url, key: oldKey }, { text: 'old' }), 401);
    const { id, result } = await run(echoTrigger, { text: 'new key' });
    expect(result.body).toEqual({ success: true, outputs: [{ title: 'text', message: 'new key' }] });
    finished.push({ id, botId: 'echo', outputs: result.body.outputs, error: null });
    expect((await adminApi(app, 'GET', `/triggers/${echoTrigger.id}`)).body.key).toBe(echoTrigger.key);

    expectAdminError(await adminApi(app, 'POST', '/triggers/trg_doesnotexist0000/rotate-key'), 404);
  });

  it('deletes a trigger: 204, then its URL, View and a second delete answer 404', async () => {
    const t = (await adminApi(app, 'POST', '/bots/echo/triggers', { name: 'Short-lived', type: 'webhook' })).body;
    shownKeys.push(t.key);
    const deleted = await adminApi(app, 'DELETE', `/triggers/${t.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBe('');
    expectError(await triggerBot(t, { text: 'x' }), 404);
    expectAdminError(await adminApi(app, 'GET', `/triggers/${t.id}`), 404);
    expectAdminError(await adminApi(app, 'DELETE', `/triggers/${t.id}`), 404);
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
      expectAdminError(await adminApi(app, 'PUT', '/accounts/demo/credits', bad), 400);
    }
    expect((await adminApi(app, 'GET', '/accounts/demo')).body).toEqual({ id: 'demo', credits: 0 });
    expectAdminError(await adminApi(app, 'GET', '/accounts/nobody'), 404);

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
          'credits',
          'durationMs',
          'error',
          'errorTruncated',
          'finishedAt',
          'id',
          'idempotencyKey',
          'outputs',
          'outputsTruncated',
          'startedAt',
          'status',
          'triggerId',
          'triggerName',
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
    expectAdminError(await adminApi(app, 'GET', '/bots/echo/invocations?limit=0'), 400);
    expectAdminError(await adminApi(app, 'GET', '/bots/nope/invocations'), 404);
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

  it('sends a browser without a session to /admin/sign-in; anything else without credentials gets 401', async () => {
    const page = await fetch(`${app.base}/admin`, { headers: { Accept: BROWSER_ACCEPT }, redirect: 'manual' });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/admin/sign-in');
    const root = await fetch(`${app.base}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/admin');
    for (const [path, accept] of [
      ['/admin', '*/*'],
      ['/admin/api/bots', 'application/json'],
      ['/admin/api/bots', BROWSER_ACCEPT], // a browser opening the API still needs a session: 303, never the data
    ]) {
      const res = await send('GET', `${app.base}${path}`, { headers: { Accept: accept } });
      if (accept === BROWSER_ACCEPT) {
        expect(res.status).toBe(200); // fetch followed the 303 to the sign-in page
        expect(res.text).toContain('Admin token');
        continue;
      }
      expectAdminError(res, 401);
      expect(res.body.message).toBe('Send the admin token as "Authorization: Bearer <ADMIN_TOKEN>" or sign in at /admin/sign-in');
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it('serves a script-free sign-in form under a strict CSP; a wrong token gets 401 and "Wrong admin token."', async () => {
    const form = await fetch(`${app.base}/admin/sign-in`);
    expect(form.status).toBe(200);
    expect(form.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(form.headers.get('content-security-policy')).toBe(SIGN_IN_CSP);
    expect(form.headers.get('cache-control')).toBe('no-store');
    const html = await form.text();
    expect(html).toMatch(/<label for="token">Admin token<\/label>\s*<input id="token" name="token" type="password"/);
    expect(html).toContain('<button type="submit">Sign in</button>');
    expect(html).not.toMatch(/<script|style=/i);
    const css = await fetch(`${app.base}/admin/sign-in.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');

    const wrong = await signInFrom(ADDRESSES.wrongOnce, 'not-the-admin-token');
    expect(wrong.status).toBe(401);
    expect(wrong.headers['content-security-policy']).toBe(SIGN_IN_CSP);
    expect(wrong.text).toContain('<p class="error" role="alert">Wrong admin token.</p>');
    expect(wrong.headers['set-cookie']).toBeUndefined();
  });

  it('signs in with the token: a 12-hour HttpOnly, SameSite=Strict session cookie for /admin, valid on any node', async () => {
    const signedIn = await signInFrom(ADDRESSES.rightToken, ADMIN_TOKEN);
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.location).toBe('/admin');
    const [setCookie, ...more] = signedIn.headers['set-cookie'] ?? [];
    expect(more).toEqual([]);
    expect(setCookie).toMatch(/^admin_session=v1\.\d{13}\.[\w-]{43}; Path=\/admin; Max-Age=43200; HttpOnly; SameSite=Strict$/); // no Secure over http
    const cookie = setCookie.split(';')[0];

    const page = await fetch(`${app.base}/admin`, { headers: { Cookie: cookie, Accept: BROWSER_ACCEPT }, redirect: 'manual' });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect((await send('GET', `${app.base}/admin/api/bots`, { headers: { Cookie: cookie } })).status).toBe(200);
    // A change with the cookie also needs the admin module's CSRF header (docs/admin.md); Bearer clients do not.
    const setCredits = (headers: Record<string, string>) =>
      send('PUT', `${app.base}/admin/api/accounts/demo/credits`, {
        headers: { Cookie: cookie, ...headers },
        json: { credits: creditsBeforeRestart },
      });
    expectAdminError(await setCredits({}), 403);
    expect((await setCredits({ 'X-Webhook-Admin': '1' })).body).toEqual({ id: 'demo', credits: creditsBeforeRestart });

    // Stateless: a session minted with the token (as another node of a scaled-out app would) works, and
    // one 12 h old, one signed with another token or one with a changed time does not.
    const now = Date.now();
    const api = (value: string) => send('GET', `${app.base}/admin/api/bots`, { headers: { Cookie: `other=1; admin_session=${value}` } });
    expect((await api(session(ADMIN_TOKEN, now - 11 * 3600_000))).status).toBe(200);
    expectAdminError(await api(session(ADMIN_TOKEN, now - 12 * 3600_000 - 1_000)), 401);
    expectAdminError(await api(session(ADMIN_TOKEN, now + 3600_000)), 401);
    expectAdminError(await api(session('another-admin-token-of-some-length', now)), 401);
    const [v, issuedAt, mac] = session(ADMIN_TOKEN, now).split('.');
    expectAdminError(await api(`${v}.${Number(issuedAt) + 1}.${mac}`), 401);

    const out = await rawRequest(`${app.base}/admin/sign-out`, { method: 'POST', headers: { Cookie: cookie } });
    expect(out.status).toBe(303);
    expect(out.headers.location).toBe('/admin/sign-in');
    expect(out.headers['set-cookie']).toEqual(['admin_session=; Path=/admin; Max-Age=0; HttpOnly; SameSite=Strict']);
  });

  it('refuses cross-site sign-in and sign-out posts (403), and sign-out ends the session on the server, not only the cookie', async () => {
    const form = (path: string, headers: Record<string, string>, body = '', localAddress = ADDRESSES.forged) =>
      rawRequest(`${loopback(app)}/admin/${path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
        body,
        localAddress,
      });
    const token = (value: string) => new URLSearchParams({ token: value }).toString();
    const ownOrigin = new URL(loopback(app)).origin;
    const CROSS_SITE: Array<Record<string, string>> = [
      { 'Sec-Fetch-Site': 'cross-site' },
      { 'Sec-Fetch-Site': 'same-site' },
      { Origin: 'https://elsewhere.example' },
      { Origin: 'null' },
    ];

    // A page elsewhere posting wrong tokens cannot spend the admin's address's allowance (10 a minute): refused
    // before the token is judged, so the right token still signs in from that address afterwards.
    for (let i = 0; i < 12; i++) {
      const forged = await form('sign-in', CROSS_SITE[i % CROSS_SITE.length], token(`wrong-${i}`));
      expect(forged.status).toBe(403);
      expect(forged.text).toContain('This form was sent from another site and was refused.');
      expect(forged.headers['set-cookie']).toBeUndefined();
    }
    // Nor can it sign in with a token it holds (a login CSRF into the attacker's session).
    expect((await form('sign-in', CROSS_SITE[0], token(ADMIN_TOKEN))).status).toBe(403);
    const signedIn = await form('sign-in', { 'Sec-Fetch-Site': 'same-origin', Origin: ownOrigin }, token(ADMIN_TOKEN));
    expect(signedIn.status).toBe(303);
    const cookie = (signedIn.headers['set-cookie'] ?? [])[0].split(';')[0];
    const api = () => send('GET', `${app.base}/admin/api/bots`, { headers: { Cookie: cookie } });
    expect((await api()).status).toBe(200);

    // A forged sign-out changes nothing: the session still works.
    for (const headers of CROSS_SITE) {
      const forged = await form('sign-out', { Cookie: cookie, ...headers });
      expect(forged.status).toBe(403);
      expect(forged.headers['set-cookie']).toBeUndefined();
    }
    expect((await api()).status).toBe(200);

    // The admin's own sign-out: the cookie is cleared, and a copy of it replayed afterwards is refused.
    const out = await form('sign-out', { Cookie: cookie, 'Sec-Fetch-Site': 'same-origin', Origin: ownOrigin });
    expect(out.status).toBe(303);
    expect(out.headers['set-cookie']).toEqual(['admin_session=; Path=/admin; Max-Age=0; HttpOnly; SameSite=Strict']);
    expectAdminError(await api(), 401);
    const page = await fetch(`${app.base}/admin`, { headers: { Cookie: cookie, Accept: BROWSER_ACCEPT }, redirect: 'manual' });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/admin/sign-in');
    // A new sign-in gives a new session that works.
    const again = await form('sign-in', {}, token(ADMIN_TOKEN), ADDRESSES.rightToken);
    expect(again.status).toBe(303);
  });

  it('limits wrong admin tokens per client address: 10 a minute (form and Bearer alike), then 429 even for the right one', async () => {
    const bearer = (from: string, token: string) =>
      rawRequest(`${loopback(app)}/admin/api/bots`, { headers: { Authorization: `Bearer ${token}` }, localAddress: from });
    const from = ADDRESSES.limited;
    for (let i = 0; i < 10; i++) {
      const res = i % 2 === 0 ? await signInFrom(from, `wrong-${i}`) : await bearer(from, `wrong-${i}`);
      expect(res.status).toBe(401);
    }
    const refused = await bearer(from, 'wrong-again');
    expect(refused.status).toBe(429);
    const wait = Number(refused.headers['retry-after']);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(refused.body).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      message: expect.stringMatching(/^Too many wrong admin tokens; try again in \d+ s$/),
    });
    expect((await bearer(from, ADMIN_TOKEN)).status).toBe(429);
    const form = await signInFrom(from, ADMIN_TOKEN);
    expect(form.status).toBe(429);
    expect(form.headers['retry-after']).toMatch(/^\d+$/);
    expect(form.text).toMatch(/role="alert">Too many wrong admin tokens; try again in \d+ s</);
    expect(form.headers['set-cookie']).toBeUndefined();

    // Another address is not affected, and right tokens are never counted.
    for (let i = 0; i < 15; i++) expect((await bearer(ADDRESSES.rightToken, ADMIN_TOKEN)).status).toBe(200);
    expect((await bearer(ADDRESSES.rightToken, 'wrong')).status).toBe(401);
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
    expectAdminError(await adminApi(app, 'GET', `/triggers/${deletedTriggerId}`), 404);
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
      ['WEBHOOK_MAX_RUN_ATTEMPTS', '0'],
      ['WEBHOOK_CALLBACK_ALLOWED_HOSTS', 'http://127.0.0.1:3000'],
      ['WEBHOOK_CALLBACK_ALLOWED_HOSTS', '127.0.0.1,,localhost'],
      ['WEBHOOK_CALLBACK_RETRY_MS', '0,5s'],
      ['WEBHOOK_CALLBACK_TIMEOUT_MS', '0'],
      ['ADMIN_TOKEN', 'fifteen-chars-x'],
    ];
    for (const [name, value] of invalid) {
      const bad = launchSampleApp({ ...env, PORT: String(await freePort()), SQLITE_PATH: ':memory:', [name]: value });
      const result = await within(bad.exited, 15_000);
      expect(result).toEqual({ code: 1, signal: null });
      expect(bad.output()).toContain(`Invalid configuration: ${name}`);
    }
  });
});
