/**
 * The admin module's JSON API over real HTTP (docs/admin.md): the host's guard on every route, the
 * trigger contract the sample app had, history filters and keyset paging, run detail, cancel, replay,
 * credits, read-only mode, CSRF for cookie sessions, and the live stream.
 */
import { AUDIT_ACTIONS, INVOCATION_STATUSES, WebhookTriggerAdminModule } from '../../src/index.js';
import { CALLBACK_EVENTS } from '../../src/persistence/records.js';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { ADMIN_TEST_BASIC, ADMIN_TEST_COOKIE, ADMIN_TEST_TOKEN, TestAdminGuard } from '../fixtures/admin-guard.js';
import { openStream } from '../helpers/event-stream.js';
import { expectAdminError, ISO, request, send, startRun, syncUntilFinished, triggerBot, until, type HttpResult } from '../helpers/http.js';
import { ADAPTERS, describeOnEveryAdapter, startWebhookApp, type TestTrigger, type WebhookTestApp } from '../helpers/webhook-app.js';

const AUTH = { Authorization: `Bearer ${ADMIN_TEST_TOKEN}` };

describeOnEveryAdapter('admin API', ({ makeAdapter }) => {
  let t: WebhookTestApp;
  let api: string;
  const get = (path: string, headers: Record<string, string> = AUTH) => send('GET', `${api}${path}`, { headers });
  const post = (path: string, json?: unknown, headers: Record<string, string> = AUTH) => send('POST', `${api}${path}`, { headers, json });
  const put = (path: string, json: unknown, headers: Record<string, string> = AUTH) => send('PUT', `${api}${path}`, { headers, json });
  const del = (path: string, headers: Record<string, string> = AUTH) => send('DELETE', `${api}${path}`, { headers });

  async function createTrigger(botId = 'echo', name = `${botId} trigger`): Promise<TestTrigger> {
    const res = await post(`/bots/${botId}/triggers`, { name, type: 'webhook' });
    expect(res.status).toBe(201);
    expect(res.body.url).toBe(`${t.baseUrl}/webhooks/${res.body.id}/trigger`); // the URL as this request reached the app
    return { id: res.body.id, key: res.body.key, url: res.body.url, botId };
  }

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      options: { keySecret: 'admin-api-test-secret-0123456789', accounts: { acct: { credits: 100 } } },
      imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [TestAdminGuard] })],
    });
    api = `${t.baseUrl}/admin/api`;
  });
  afterAll(() => t.close());

  describe("the host's guard", () => {
    it.each(['/admin', '/admin/assets/main.js', '/admin/assets/api.js', '/admin/api/bots', '/admin/api/events'])(
      'answers 401 on %s without credentials',
      async (path) => {
        const res = await request(`${t.baseUrl}${path}`);
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject({ statusCode: 401, message: 'Sign in first' });
      },
    );

    it('refuses a change without credentials before anything changes', async () => {
      const res = await post('/bots/echo/triggers', { name: 'x' }, {});
      expect(res.status).toBe(401);
      expect(await t.admin.listTriggers('echo')).not.toContainEqual(expect.objectContaining({ name: 'x' }));
    });
  });

  describe('bots', () => {
    it('lists each bot with its account, balance, triggers and runs of the last 24 h', async () => {
      const trigger = await createTrigger('fail', 'counted');
      await syncUntilFinished(trigger, await startRun(trigger));
      const res = await get('/bots');
      expect(res.status).toBe(200);
      expect(res.body).toContainEqual({
        id: 'fail',
        name: 'fail',
        accountId: 'acct',
        creditsPerRun: 1,
        accountCredits: expect.any(Number),
        triggers: 1,
        runsLast24h: 1,
      });
      expect((await get('/bots/fail')).body).toMatchObject({ id: 'fail', triggers: 1, runsLast24h: 1 });
    });

    it('answers 404 for an unknown bot', async () => {
      expectAdminError(await get('/bots/nope'), 404);
      expectAdminError(await get('/bots/nope/triggers'), 404);
      expectAdminError(await get('/bots/nope/invocations'), 404);
    });
  });

  describe('triggers', () => {
    it('creates, lists (with last use), views, rotates and deletes a trigger', async () => {
      const created = await post('/bots/echo/triggers', { name: 'Orders', type: 'webhook' });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: expect.stringMatching(/^trg_/),
        name: 'Orders',
        type: 'webhook',
        botId: 'echo',
        url: expect.stringMatching(new RegExp(`^https?://[^/]+/webhooks/${created.body.id}/trigger$`)),
        key: expect.any(String),
        createdAt: ISO,
      });
      const trigger: TestTrigger = {
        id: created.body.id,
        key: created.body.key,
        url: `${t.baseUrl}/webhooks/${created.body.id}/trigger`,
        botId: 'echo',
      };
      const listed = () => get('/bots/echo/triggers').then((r) => r.body.find((x: { id: string }) => x.id === trigger.id));
      expect(await listed()).toEqual({
        id: trigger.id,
        name: 'Orders',
        type: 'webhook',
        url: created.body.url,
        createdAt: ISO,
        lastUsedAt: null,
      });
      expect(JSON.stringify((await get('/bots/echo/triggers')).body)).not.toContain(created.body.key);

      expect((await triggerBot(trigger, { a: 1 })).status).toBe(200);
      expect((await listed()).lastUsedAt).toEqual(ISO);

      expect((await get(`/triggers/${trigger.id}`)).body).toMatchObject({ id: trigger.id, key: created.body.key });

      const rotated = await post(`/triggers/${trigger.id}/rotate-key`);
      expect(rotated.status).toBe(200);
      expect(rotated.body).toEqual({
        id: trigger.id,
        url: created.body.url,
        key: expect.any(String),
        keyId: expect.any(String),
        graceEndsAt: ISO,
      });
      // The old key works on through the grace period (keyRotationGraceMs; its end: trigger-keys.e2e-spec.ts).
      expect((await triggerBot(trigger)).status).toBe(200);
      expect((await triggerBot({ ...trigger, key: rotated.body.key })).status).toBe(200);

      expect((await del(`/triggers/${trigger.id}`)).status).toBe(204);
      expect((await triggerBot({ ...trigger, key: rotated.body.key })).status).toBe(404);
      expectAdminError(await get(`/triggers/${trigger.id}`), 404);
      expectAdminError(await del(`/triggers/${trigger.id}`), 404);
      expectAdminError(await post(`/triggers/${trigger.id}/rotate-key`), 404);
    });

    it.each([
      ['no body', undefined],
      ['an array', []],
      ['an empty name', { name: '  ' }],
      ['another type', { name: 'x', type: 'cron' }],
    ])('answers 400 for %s and creates nothing', async (_case, body) => {
      const before = (await get('/bots/echo/triggers')).body.length;
      const res = await post('/bots/echo/triggers', body);
      expectAdminError(res, 400);
      expect((await get('/bots/echo/triggers')).body).toHaveLength(before);
    });
  });

  describe('history', () => {
    let a: TestTrigger;
    let b: TestTrigger;
    const ids: string[] = [];

    beforeAll(async () => {
      a = await createTrigger('echo', 'history a');
      b = await createTrigger('echo', 'history b');
      for (let i = 0; i < 5; i++) {
        const trigger = i % 2 ? b : a;
        const id = await startRun(trigger, { n: String(i) }, { headers: { 'Idempotency-Key': `key-${i}` } });
        ids.push(id);
        await syncUntilFinished(trigger, id);
      }
    });

    const page = (query: string) => get(`/bots/echo/invocations?${query}`).then((r) => r.body as Array<{ id: string }>);
    const mine = (runs: Array<{ id: string }>) => runs.map((r) => r.id).filter((id) => ids.includes(id));

    it('lists newest first with the trigger name, outputs and idempotency key', async () => {
      const res = await get('/bots/echo/invocations?limit=5');
      expect(res.status).toBe(200);
      expect(res.body.map((r: { id: string }) => r.id)).toEqual([...ids].reverse());
      expect(res.body[0]).toEqual({
        id: ids[4],
        triggerId: a.id,
        triggerName: 'history a',
        status: 'succeeded',
        credits: 1,
        createdAt: ISO,
        startedAt: ISO,
        finishedAt: ISO,
        durationMs: expect.any(Number),
        outputs: [{ title: 'n', message: '4' }],
        outputsTruncated: false,
        error: null,
        errorTruncated: false,
        idempotencyKey: 'key-4',
      });
    });

    it('filters by trigger, status and time, and searches by id and idempotency key', async () => {
      expect(mine(await page(`triggerId=${b.id}`))).toEqual([ids[3], ids[1]]);
      expect(mine(await page('status=succeeded&limit=1000'))).toEqual([...ids].reverse());
      expect(await page('status=failed&triggerId=' + a.id)).toEqual([]);
      expect(mine(await page(`q=${ids[2]}`))).toEqual([ids[2]]);
      expect(mine(await page('q=key-3'))).toEqual([ids[3]]);
      const detail = (await get(`/invocations/${ids[2]}`)).body;
      expect(mine(await page(`from=${detail.createdAt}&triggerId=${a.id}`))).toEqual([ids[4], ids[2]]);
      expect(mine(await page(`to=${detail.createdAt}&triggerId=${a.id}`))).toEqual([ids[0]]);
    });

    it('pages by keyset: before=<last id> gives the next older page, nothing lost or repeated', async () => {
      const first = await page(`triggerId=${a.id}&limit=2`);
      const second = await page(`triggerId=${a.id}&limit=2&before=${first[1].id}`);
      expect([...first, ...second].map((r) => r.id)).toEqual([ids[4], ids[2], ids[0]]);
    });

    it.each([
      ['limit=0', 'limit'],
      ['limit=abc', 'limit'],
      ['status=done', 'status'],
      ['from=yesterday', 'from'],
      ['triggerId=nope', 'triggerId'],
      ['before=inv_unknownunknownunknown1', 'before'],
      ['status=failed&status=succeeded', 'status'],
    ])('answers 400 for %s, naming %s', async (query, field) => {
      const res = await get(`/bots/echo/invocations?${query}`);
      expectAdminError(res, 400);
      expect(res.body.message).toContain(field);
    });

    // Every history parameter, repeated (a list on both adapters) or in a bracket form (a list or object under
    // Express's extended parser, a key such as `limit[]` under the simple parsers both adapters use by default).
    const PARAMS = ['limit', 'status', 'triggerId', 'from', 'to', 'q', 'before'];
    it.each(PARAMS.flatMap((p) => [`${p}=1&${p}=2`, `${p}[]=1`, `${p}[a]=1`]))(
      'answers 400 with a JSON body for ?%s, never a 500',
      async (query) => {
        const res = await get(`/bots/echo/invocations?${query}`);
        expectAdminError(res, 400);
        expect(res.body.message).toContain(query.split(/[=[]/)[0]);
        expect(res.body.message).toContain('given once, as text');
      },
    );

    it('reads an empty parameter as no filter', async () => {
      const res = await get(`/bots/echo/invocations?${PARAMS.map((p) => `${p}=`).join('&')}`);
      expect(res.status).toBe(200);
      expect(mine(res.body)).toEqual([...ids].reverse());
    });

    it.each(['botId=echo&botId=fail', 'botId[]=echo'])('answers 400 for the live stream with ?%s', async (query) => {
      const res = await get(`/events?${query}`);
      expectAdminError(res, 400);
      expect(res.body.message).toContain('botId');
    });
  });

  describe('run detail, cancel and replay', () => {
    it('shows a run with its trigger and timeline, inputs hidden unless showInputs', async () => {
      const trigger = await createTrigger('slow', 'detail');
      const id = await startRun(trigger, { ms: 1, secret: 's3cret' });
      await syncUntilFinished(trigger, id);
      const res = await get(`/invocations/${id}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id,
        botId: 'slow',
        accountId: 'acct',
        status: 'succeeded',
        outputs: [{ title: 'slept', message: '1' }],
        inputsHidden: true,
        trigger: { id: trigger.id, name: 'detail', deleted: false },
        timeline: [
          { status: 'queued', at: res.body.createdAt },
          { status: 'running', at: res.body.startedAt },
          { status: 'succeeded', at: res.body.finishedAt },
        ],
      });
      expect(res.body).not.toHaveProperty('inputs');
      expect(res.text).not.toContain('s3cret');
      expectAdminError(await get('/invocations/inv_unknownunknownunknown1'), 404);
    });

    it('cancels a running run (its bot stops) and answers 409 for a finished one', async () => {
      const trigger = await createTrigger('slow', 'to cancel');
      const id = await startRun(trigger, { ms: 10_000 });
      await until(async () => (await get(`/invocations/${id}`)).body.status === 'running', 5_000, 'the run to start');
      const res = await post(`/invocations/${id}/cancel`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id, status: 'cancelled', error: { code: 'cancelled' } });
      expect(res.body.timeline.map((s: { status: string }) => s.status)).toEqual(['queued', 'running', 'cancelled']);
      const again = await post(`/invocations/${id}/cancel`);
      expectAdminError(again, 409);
      expectAdminError(await post('/invocations/inv_unknownunknownunknown1/cancel'), 404);
    });

    it('replays a run with edited inputs as a new, charged run through the same trigger', async () => {
      const trigger = await createTrigger('echo', 'replayed');
      const first = await startRun(trigger, { city: 'Paris' });
      await syncUntilFinished(trigger, first);
      const balance = (await get('/accounts/acct')).body.credits;

      const same = await post(`/invocations/${first}/replay`);
      expect(same.status).toBe(201);
      expect(same.body).toEqual({ id: expect.stringMatching(/^inv_/) });
      const edited = await post(`/invocations/${first}/replay`, { inputs: { city: 'Lyon' } });
      expect(edited.status).toBe(201);

      expect((await syncUntilFinished(trigger, same.body.id)).body.outputs).toEqual([{ title: 'city', message: 'Paris' }]);
      expect((await syncUntilFinished(trigger, edited.body.id)).body.outputs).toEqual([{ title: 'city', message: 'Lyon' }]);
      expect((await get('/accounts/acct')).body.credits).toBe(balance - 2);
      expect((await get(`/invocations/${edited.body.id}`)).body.trigger).toEqual({ id: trigger.id, name: 'replayed', deleted: false });
    });

    it('refuses a replay with bad inputs (400), of an unknown run (404), of a deleted trigger (409), without credits (402)', async () => {
      const trigger = await createTrigger('echo', 'refused replays');
      const id = await startRun(trigger, {});
      await syncUntilFinished(trigger, id);
      const balance = (await get('/accounts/acct')).body.credits;
      expectAdminError(await post(`/invocations/${id}/replay`, { inputs: [1] }), 400);
      expectAdminError(await post(`/invocations/${id}/replay`, { inputs: 'x' }), 400);
      expectAdminError(await post('/invocations/inv_unknownunknownunknown1/replay'), 404);
      expect((await get('/accounts/acct')).body.credits).toBe(balance);

      expect((await put('/accounts/acct/credits', { credits: 0 })).status).toBe(200);
      expectAdminError(await post(`/invocations/${id}/replay`), 402);
      expect((await put('/accounts/acct/credits', { credits: balance })).status).toBe(200);

      await del(`/triggers/${trigger.id}`);
      const gone = await post(`/invocations/${id}/replay`);
      expectAdminError(gone, 409);
      expect(gone.body.message).toContain('deleted');
      expect((await get(`/invocations/${id}`)).body.trigger).toEqual({ id: trigger.id, name: null, deleted: true });
      expect((await get('/accounts/acct')).body.credits).toBe(balance);
    });
  });

  describe('accounts', () => {
    it('reads and sets credits; 400 for a bad amount, 404 for an unknown account', async () => {
      expect((await put('/accounts/fresh/credits', { credits: 7 })).body).toEqual({ id: 'fresh', credits: 7 });
      expect((await get('/accounts/fresh')).body).toEqual({ id: 'fresh', credits: 7 });
      expectAdminError(await put('/accounts/fresh/credits', { credits: -1 }), 400);
      expectAdminError(await put('/accounts/fresh/credits', { credits: 1.5 }), 400);
      expectAdminError(await put('/accounts/fresh/credits', ['x']), 400);
      expect((await get('/accounts/fresh')).body.credits).toBe(7);
      expectAdminError(await get('/accounts/never-opened'), 404);
    });
  });

  describe('CSRF with a cookie session or Basic credentials', () => {
    const cookie = { Cookie: ADMIN_TEST_COOKIE };

    it('refuses a cookie change without the admin header, or from another site, and changes nothing', async () => {
      const refusals: HttpResult[] = [
        await put('/accounts/csrf/credits', { credits: 5 }, cookie),
        await put('/accounts/csrf/credits', { credits: 5 }, { ...cookie, 'X-Webhook-Admin': '1', Origin: 'https://evil.example' }),
        await put('/accounts/csrf/credits', { credits: 5 }, { ...cookie, 'X-Webhook-Admin': '1', 'Sec-Fetch-Site': 'cross-site' }),
        await put('/accounts/csrf/credits', { credits: 5 }, { Authorization: ADMIN_TEST_BASIC }),
      ];
      for (const res of refusals) {
        expectAdminError(res, 403);
        expect(res.body.message).toContain('Cross-site');
      }
      expectAdminError(await get('/accounts/csrf', cookie), 404);
    });

    it("refuses a cross-site cookie change of a trigger's callback (a forged form cannot aim the server at a URL)", async () => {
      const trigger = await createTrigger('echo', 'csrf callback');
      const url = 'https://attacker.example/collect';
      expectAdminError(await put(`/triggers/${trigger.id}/callback`, { url }, cookie), 403);
      expectAdminError(
        await put(`/triggers/${trigger.id}/callback`, { url }, { ...cookie, 'X-Webhook-Admin': '1', Origin: 'https://evil.example' }),
        403,
      );
      expect(await t.admin.getCallback(trigger.id)).toBeNull();
    });

    it('accepts a same-origin cookie change with the header, and reads without it', async () => {
      const origin = t.baseUrl;
      const res = await put(
        '/accounts/csrf2/credits',
        { credits: 5 },
        { ...cookie, 'X-Webhook-Admin': '1', Origin: origin, 'Sec-Fetch-Site': 'same-origin' },
      );
      expect(res.status).toBe(200);
      expect((await get('/accounts/csrf2', cookie)).body).toEqual({ id: 'csrf2', credits: 5 });
    });

    it('accepts a change whose only credential is a Bearer token, from a screen on another origin too (a page cannot hold it)', async () => {
      const res = await put(
        '/accounts/csrf3/credits',
        { credits: 6 },
        { ...AUTH, Origin: 'https://console.example', 'Sec-Fetch-Site': 'same-site' },
      );
      expect(res.status).toBe(200);
      expect((await get('/accounts/csrf3')).body).toEqual({ id: 'csrf3', credits: 6 });
    });
  });

  describe('live stream', () => {
    it("pushes every state change of the bot's runs, and only that bot's", async () => {
      const trigger = await createTrigger('echo', 'live');
      const other = await createTrigger('fail', 'live other');
      const stream = await openStream(`${api}/events?botId=echo`, AUTH);
      try {
        await triggerBot(other);
        const id = await startRun(trigger, { x: 'y' });
        const events = await stream.until((all) => all.some((e) => e.invocationId === id && e.status === 'succeeded'));
        expect(events.filter((e) => e.invocationId === id).map((e) => e.status)).toEqual(['queued', 'running', 'succeeded']);
        expect(events.every((e) => e.botId === 'echo')).toBe(true);
        expect(events.find((e) => e.invocationId === id)).toEqual({
          invocationId: id,
          botId: 'echo',
          triggerId: trigger.id,
          status: 'queued',
        });
      } finally {
        stream.close();
      }
    });

    it('answers 404 for an unknown bot', async () => {
      expectAdminError(await get('/events?botId=nope'), 404);
    });
  });

  describe('screens', () => {
    it('serves the page with a strict CSP, and its assets from the package', async () => {
      const page = await request(`${t.baseUrl}/admin`, { headers: AUTH });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(page.text).toContain('data-base="/admin"');
      expect(page.text).toContain('<script type="module" src="/admin/assets/main.js">');
      expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
      const js = await request(`${t.baseUrl}/admin/assets/main.js`, { headers: AUTH });
      expect(js.status).toBe(200);
      expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect(js.headers.get('cache-control')).toBe('no-cache');
      expect(js.text).toContain("window.addEventListener('hashchange', route);"); // the file itself, not a JSON-wrapped Buffer
      // Every module main.js imports, and every one they import, is served as JavaScript.
      const seen = new Set<string>();
      const pending = ['main.js'];
      for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
        if (seen.has(file)) continue;
        seen.add(file);
        const module = await request(`${t.baseUrl}/admin/assets/${file}`, { headers: AUTH });
        expect([file, module.status, module.headers.get('content-type')]).toEqual([file, 200, expect.stringMatching(/^text\/javascript/)]);
        for (const [, imported] of module.text.matchAll(/^import [^;]*? from '\.\/([\w-]+\.js)';$/gm)) pending.push(imported);
      }
      expect(seen.size).toBeGreaterThan(10);
      // The server's statuses, callback events and page size, in the page (HTML-escaped JSON).
      const config = page.text.match(/data-config="([^"]*)"/)?.[1] ?? '';
      expect(JSON.parse(config.replace(/&quot;/g, '"').replace(/&amp;/g, '&'))).toEqual({
        statuses: [...INVOCATION_STATUSES],
        activeStatuses: ['queued', 'running'],
        callbackEvents: [...CALLBACK_EVENTS],
        alwaysSentEvent: 'invocation.completed',
        historyPageSize: 50,
        recentRunsCap: 10_000,
        auditActions: [...AUDIT_ACTIONS],
        auditPageSize: 50,
      });
      const css = await request(`${t.baseUrl}/admin/assets/admin.css`, { headers: AUTH });
      expect(css.headers.get('content-type')).toMatch(/^text\/css/);
      expect(css.text).toContain(':focus-visible');
      expectAdminError(await request(`${t.baseUrl}/admin/assets/..%2Fpackage.json`, { headers: AUTH }), 404);
      expectAdminError(await request(`${t.baseUrl}/admin/assets/nope.js`, { headers: AUTH }), 404);
      expectAdminError(await request(`${t.baseUrl}/admin/assets/format.spec.ts`, { headers: AUTH }), 404);
      expectAdminError(await request(`${t.baseUrl}/admin/assets/index.html`, { headers: AUTH }), 404);
    });
  });
});

describeOnEveryAdapter('admin API, read-only, under a global prefix', ({ makeAdapter }) => {
  let t: WebhookTestApp;
  let api: string;

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      options: { accounts: { acct: { credits: 10 } } },
      globalPrefix: 'v1',
      imports: [WebhookTriggerAdminModule.forRoot({ path: '/ops/webhooks/', guards: [TestAdminGuard], readOnly: true, showInputs: true })],
    });
    api = `${t.baseUrl}/v1/ops/webhooks/api`;
  });
  afterAll(() => t.close());

  it('reads, shows inputs, and refuses every change with 403 leaving the data as it was', async () => {
    const trigger = await t.admin.createTrigger('echo', { name: 'ro' });
    const run = await startRun({ ...trigger, key: trigger.key, url: `${t.baseUrl}/v1/webhooks/${trigger.id}/trigger` }, { city: 'Oslo' });
    expect((await send('GET', `${api}/bots`, { headers: AUTH })).status).toBe(200);
    await until(
      async () => (await send('GET', `${api}/invocations/${run}`, { headers: AUTH })).body.status === 'succeeded',
      5_000,
      'the run',
    );
    expect((await send('GET', `${api}/invocations/${run}`, { headers: AUTH })).body).toMatchObject({
      inputs: { city: 'Oslo' },
      inputsHidden: false,
    });

    const changes: Array<[string, string, unknown]> = [
      ['POST', '/bots/echo/triggers', { name: 'x' }],
      ['POST', `/triggers/${trigger.id}/rotate-key`, undefined],
      ['POST', `/triggers/${trigger.id}/keys`, { label: 'x' }],
      ['DELETE', `/triggers/${trigger.id}/keys/key_AAAAAAAAAAAAAAAA`, undefined],
      ['DELETE', `/triggers/${trigger.id}`, undefined],
      ['POST', `/invocations/${run}/replay`, undefined],
      ['POST', `/invocations/${run}/cancel`, undefined],
      ['PUT', '/accounts/acct/credits', { credits: 999 }],
      ['PUT', `/triggers/${trigger.id}/callback`, { url: 'https://receiver.example.com/runs' }],
      ['DELETE', `/triggers/${trigger.id}/callback`, undefined],
      ['POST', `/triggers/${trigger.id}/callback/rotate-secret`, undefined],
      ['POST', '/deliveries/dlv_AAAAAAAAAAAAAAAAAAAAAA/redeliver', undefined],
    ];
    for (const [method, path, json] of changes) {
      const res = await send(method, `${api}${path}`, { headers: AUTH, json });
      expectAdminError(res, 403);
      expect(res.body.message).toContain('read-only');
    }
    expect(await t.admin.listTriggers('echo')).toHaveLength(1);
    expect(await t.admin.listKeys(trigger.id)).toHaveLength(1);
    expect((await t.admin.viewTrigger(trigger.id))?.id).toBe(trigger.id);
    expect((await t.admin.getCredits('acct'))?.credits).toBe(9);
    expect(await t.admin.getCallback(trigger.id)).toBeNull();
    expectAdminError(await send('GET', `${api}/triggers/${trigger.id}/callback`, { headers: AUTH }), 404); // reads still answer
  });

  it('renders the page for the prefixed mount', async () => {
    const page = await request(`${t.baseUrl}/v1/ops/webhooks`, { headers: AUTH });
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-base="/v1/ops/webhooks"');
    expect(page.text).toContain('data-read-only="true"');
  });
});

describe('admin module setup', () => {
  it('requires guards, naming the option and the opt-out', () => {
    expect(() => WebhookTriggerAdminModule.forRoot({} as never)).toThrow(/"guards" is required.*guards: \[\]/);
  });

  it.each([
    [{ guards: [TestAdminGuard], path: 'a b' }, 'path'],
    [{ guards: [{}] }, 'guards'],
    [{ guards: [TestAdminGuard], readOnly: 'yes' }, 'readOnly'],
    [{ guards: [TestAdminGuard], maxEventStreams: 0 }, 'maxEventStreams'],
    [{ guards: [TestAdminGuard], showInput: true }, 'showInput'],
    [{ guards: [TestAdminGuard], signOutPath: '//elsewhere.example/out' }, 'signOutPath'],
    [{ guards: [TestAdminGuard], signOutPath: 'https://elsewhere.example/out' }, 'signOutPath'],
    [{ guards: [TestAdminGuard], signOutPath: '/out" onclick="x' }, 'signOutPath'],
  ])('refuses %j at startup, naming %s', (options, field) => {
    expect(() => WebhookTriggerAdminModule.forRoot(options as never)).toThrow(new RegExp(`"${field}"`));
  });

  it('warns when mounted with guards: [], and then answers without credentials', async () => {
    const lines: string[] = [];
    const logger = { log() {}, error() {}, debug() {}, verbose() {}, warn: (m: unknown) => void lines.push(String(m)) };
    const t = await startWebhookApp(() => undefined, { logger, imports: [WebhookTriggerAdminModule.forRoot({ guards: [] })] });
    try {
      expect(lines).toContainEqual(expect.stringContaining('mounted at /admin with guards: []'));
      expect((await request(`${t.baseUrl}/admin/api/bots`)).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('takes its settings from forRootAsync and guard instances', async () => {
    const t = await startWebhookApp(() => undefined, {
      imports: [
        WebhookTriggerAdminModule.forRootAsync({
          path: 'async-admin',
          guards: [new TestAdminGuard()],
          useFactory: async () => ({ readOnly: true }),
        }),
      ],
    });
    try {
      expect((await request(`${t.baseUrl}/async-admin/api/bots`)).status).toBe(401);
      expect((await send('PUT', `${t.baseUrl}/async-admin/api/accounts/a/credits`, { headers: AUTH, json: { credits: 1 } })).status).toBe(
        403,
      );
    } finally {
      await t.close();
    }
  });

  it('stops startup when WebhookTriggerModule is missing, saying so', async () => {
    const { Test } = await import('@nestjs/testing');
    const moduleRef = await Test.createTestingModule({ imports: [WebhookTriggerAdminModule.forRoot({ guards: [] })] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await expect(app.init()).rejects.toThrow('WebhookTriggerAdminModule needs WebhookTriggerModule.forRoot()');
    await app.close().catch(() => undefined);
  });

  it.each(ADAPTERS)(
    'bounds live streams per node (503 beyond maxEventStreams) and ends them all when the app closes (%s)',
    async (_name, makeAdapter) => {
      const t = await startWebhookApp(makeAdapter, {
        imports: [WebhookTriggerAdminModule.forRoot({ guards: [TestAdminGuard], maxEventStreams: 2 })],
      });
      const api = `${t.baseUrl}/admin/api`;
      const streams = [await openStream(`${api}/events`, AUTH), await openStream(`${api}/events?botId=echo`, AUTH)];
      const third = await send('GET', `${api}/events`, { headers: AUTH });
      expectAdminError(third, 503);
      streams[1].close();
      await until(
        async () => (await fetch(`${api}/events`, { headers: AUTH }).then((r) => (void r.body?.cancel(), r.status))) === 200,
        2_000,
        'a slot',
      );
      const started = performance.now();
      await t.close();
      // A kept-alive stream connection would hold the server's close until its keep-alive timeout (~5 s).
      expect(performance.now() - started).toBeLessThan(2_000);
      streams[0].close();
    },
  );
});

/** A host's admin guard that trusts the network alone (an admin reachable from inside only): no credential asked. */
class InsideNetworkGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const ip = context.switchToHttp().getRequest<{ ip?: string }>().ip ?? '';
    return ip === '127.0.0.1' || ip === '::1' || ip === '::ffff:127.0.0.1';
  }
}

describeOnEveryAdapter('admin API behind a guard that trusts the network', ({ makeAdapter }) => {
  let t: WebhookTestApp;
  const setCredits = (account: string, headers: Record<string, string>) =>
    send('PUT', `${t.baseUrl}/admin/api/accounts/${account}/credits`, { headers, json: { credits: 9 } });
  const fromElsewhere = { Origin: 'https://evil.example', 'Sec-Fetch-Site': 'cross-site' };

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [InsideNetworkGuard] })],
    });
  });
  afterAll(() => t.close());

  // The browser of an admin inside the network attaches these by itself to a form a page elsewhere posts.
  it.each([
    ['no credential at all', {}],
    ['Negotiate', { Authorization: 'Negotiate YIIGhgYGKwYBBQUCoII=' }],
    ['NTLM', { Authorization: 'NTLM TlRMTVNTUAABAAAAB4IIog==' }],
    ['Digest', { Authorization: 'Digest username="admin", realm="admin", nonce="n", uri="/", response="r"' }],
  ])('refuses a change another site sent, with %s (403), and changes nothing', async (_case, credential) => {
    const res = await setCredits('forged', { ...credential, ...fromElsewhere, 'X-Webhook-Admin': '1' });
    expectAdminError(res, 403);
    expect(res.body.message).toContain('Cross-site');
    expect((await setCredits('forged', { ...credential, Origin: 'https://evil.example' })).status).toBe(403); // an older browser: Origin only
    expect(await t.admin.getCredits('forged')).toBeNull();
  });

  it('asks the admin header of a change with a credential the browser attaches; a script without one passes', async () => {
    const negotiate = { Authorization: 'Negotiate YIIGhgYGKwYBBQUCoII=' };
    expectAdminError(await setCredits('inside', negotiate), 403);
    expect((await setCredits('inside', { ...negotiate, 'X-Webhook-Admin': '1', 'Sec-Fetch-Site': 'same-origin' })).status).toBe(200);
    expect((await setCredits('script', {})).status).toBe(200);
    expect((await t.admin.getCredits('script'))?.credits).toBe(9);
  });
});
