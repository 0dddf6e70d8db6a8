/**
 * What an unauthenticated or hostile client can make a node do: nothing of the body is read before the
 * trigger, the key and the limits are judged; a body is bounded in size, time and depth; a client that
 * drops is not an error; wrong keys are counted exactly; impossible ids are 404.
 */
import type { CanActivate, LoggerService } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { connect, type Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { BODY_TOO_DEEP, TOO_MANY_FAILED_KEYS, TOO_MANY_UNVERIFIED_BODIES } from '../../src/errors/webhook-trigger.messages.js';
import { RunEventStreams } from '../../src/http/run-event-streams.js';
import { InvocationWaiter } from '../../src/invocations/invocation.waiter.js';
import { expectNothingStored, storedCredits } from '../helpers/db.js';
import { expectError, rawRequest, request, sleep, startRun, syncUntilFinished, triggerBot, until } from '../helpers/http.js';
import {
  UNTHROTTLED,
  createTrigger,
  describeOnEveryAdapter,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  type TestTrigger,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';

const ACCOUNT = 'acct';

/** A logger that remembers every line at warn level or above, and the debug lines apart. */
function recordingLogger(): LoggerService & { loud: string[]; debugLines: string[] } {
  const loud: string[] = [];
  const debugLines: string[] = [];
  const keep =
    (level: string) =>
    (message: unknown, ...rest: unknown[]) =>
      loud.push(`${level}: ${String(message)} ${rest.map(String).join(' ')}`);
  return {
    loud,
    debugLines,
    log: () => undefined,
    debug: (message: unknown) => debugLines.push(String(message)),
    verbose: () => undefined,
    warn: keep('warn'),
    error: keep('error'),
    fatal: keep('fatal'),
  };
}

/** A raw HTTP/1.1 exchange: what the server answers (status line, headers, body) and when it closes the socket. */
interface RawExchange {
  socket: Socket;
  /** Resolves with the whole answer once the server closed the connection (or after `ms`). */
  answer(ms?: number): Promise<{ status: number; head: string; body: string; closedByServer: boolean; at: number }>;
}

function openRaw(baseUrl: string, head: string, firstBytes = ''): RawExchange {
  const { hostname, port } = new URL(baseUrl);
  const socket = connect(Number(port), hostname);
  const started = Date.now();
  let data = '';
  let closedByServer = false;
  socket.on('data', (d: Buffer) => (data += d.toString('utf8')));
  socket.on('end', () => (closedByServer = true));
  socket.on('error', () => undefined); // the server may reset a connection it refused
  socket.write(head + firstBytes);
  return {
    socket,
    answer: (ms = 3000) =>
      new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          const [headPart, ...bodyParts] = data.split('\r\n\r\n');
          resolve({
            status: Number(headPart.split(' ')[1] ?? 0),
            head: headPart,
            body: bodyParts.join('\r\n\r\n'),
            closedByServer,
            at: Date.now() - started,
          });
        };
        const timer = setTimeout(done, ms);
        socket.on('close', done);
      }),
  };
}

const requestHead = (method: string, url: string, headers: Record<string, string>) => {
  const u = new URL(url);
  return `${method} ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
};
const postHead = (t: Pick<TestTrigger, 'url'>, headers: Record<string, string>) => requestHead('POST', t.url, headers);

describeOnEveryAdapterAndDatabase('hostile input', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;
  let echo: TestTrigger;
  let allowListed: TestTrigger;
  let logger: ReturnType<typeof recordingLogger>;

  beforeAll(async () => {
    logger = recordingLogger();
    t = await startWebhookApp(makeAdapter, {
      database,
      logger,
      options: {
        rateLimits: UNTHROTTLED,
        bodyTimeoutMs: 400,
        maxBodyBytes: 64 * 1024,
        failedKeyLimit: { limit: 1_000_000, ttlMs: 60_000 },
      },
    });
    echo = await createTrigger(t, 'echo');
    allowListed = await createTrigger(t, 'echo');
    await t.admin.setAllowedIps(allowListed.id, ['203.0.113.0/24']);
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    await t.admin.setCredits(ACCOUNT, 1000);
    logger.loud.length = 0;
  });

  it.each([
    ['an unknown trigger', 404, () => ({ url: `${t.baseUrl}/webhooks/trg_AAAAAAAAAAAAAAAA/trigger`, key: 'whk_x' })],
    ['a wrong key', 401, () => ({ url: echo.url, key: 'whk_wrong' })],
    ['an address outside the allow-list', 403, () => ({ url: allowListed.url, key: allowListed.key })],
  ])(
    'answers %s (%i) from the path and headers while a 1 GB body is still to come, and closes the connection',
    async (_case, status, target) => {
      const { url, key } = target();
      const exchange = openRaw(
        t.baseUrl,
        postHead({ url }, { 'Content-Type': 'application/json', 'X-Key': key, 'Content-Length': String(1024 ** 3) }),
        '{"a":',
      );
      const answer = await exchange.answer();
      exchange.socket.destroy();
      expect(answer.status).toBe(status);
      expect(answer.at).toBeLessThan(1500);
      expect(answer.closedByServer).toBe(true);
      expect(JSON.parse(answer.body)).toMatchObject({ success: false, statusCode: status });
    },
  );

  // A GET route takes no body: the host's parser once read (up to 100 kB) and held it before the guard, and answered
  // a malformed one with its own 400 (or nothing at all until the body was complete).
  it.each([
    ['an unknown trigger', 404, 'sync', () => `${t.baseUrl}/webhooks/trg_AAAAAAAAAAAAAAAA/trigger`],
    ['a wrong key', 401, 'sync', () => echo.url],
    ['a wrong key', 401, 'status', () => echo.url],
    ['a wrong key', 401, 'events', () => echo.url],
    ['an address outside the allow-list', 403, 'sync', () => allowListed.url],
  ])(
    'answers %s (%i) on the %s route from the path and headers while a stray body is still to come, and closes the connection',
    async (_case, status, route, triggerUrl) => {
      const path = `/invocation/inv_AAAAAAAAAAAAAAAAAAAAAA${route === 'status' ? '' : `/${route}`}`;
      const url = `${triggerUrl()}${path}`;
      const headers = { 'Content-Type': 'application/json', 'X-Key': 'whk_wrong' };
      const exchange = openRaw(t.baseUrl, requestHead('GET', url, { ...headers, 'Content-Length': '60000' }), '{"a":');
      const answer = await exchange.answer();
      exchange.socket.destroy();
      expect({ status: answer.status, closedByServer: answer.closedByServer }).toEqual({ status, closedByServer: true });
      expect(answer.at).toBeLessThan(1500);
      expect(JSON.parse(answer.body)).toMatchObject({ success: false, statusCode: status });
      // A whole malformed body changes nothing either (it once got the host parser's 400).
      const whole = await rawRequest(url, { headers: { ...headers, 'Content-Length': '5' }, body: '{"x":' });
      expect({ status: whole.status, body: whole.body }).toMatchObject({ status, body: { success: false, statusCode: status } });
      expect(logger.loud).toEqual([]);
    },
  );

  it('answers the status of a run with its key as without a stray body, never reading it, and closes the connection', async () => {
    const id = await startRun(echo, { a: 1 });
    const url = `${echo.url}/invocation/${id}`;
    const headers = { 'Content-Type': 'application/json', 'X-Key': echo.key };
    const exchange = openRaw(t.baseUrl, requestHead('GET', url, { ...headers, 'Content-Length': '60000' }), '{"x":');
    const answer = await exchange.answer();
    exchange.socket.destroy();
    expect({ status: answer.status, closedByServer: answer.closedByServer }).toEqual({ status: 200, closedByServer: true });
    expect(JSON.parse(answer.body)).toMatchObject({ success: true, invocation: { id } });
    const whole = await rawRequest(url, { headers: { ...headers, 'Content-Length': '5' }, body: '{"x":' });
    expect({ status: whole.status, body: whole.body }).toMatchObject({ status: 200, body: { success: true, invocation: { id } } });
    expect(logger.loud).toEqual([]);
  });

  it('answers 413 at once for a declared Content-Length over maxBodyBytes, reads none of it, stores and charges nothing', async () => {
    const fresh = await createTrigger(t, 'echo');
    const exchange = openRaw(
      t.baseUrl,
      postHead(fresh, { 'Content-Type': 'application/json', 'X-Key': fresh.key, 'Content-Length': String(10 * 1024 ** 3) }),
    );
    const answer = await exchange.answer();
    exchange.socket.destroy();
    expect(answer.status).toBe(413);
    expect(answer.at).toBeLessThan(1500);
    expect(answer.closedByServer).toBe(true);
    await expectNothingStored(t, [], fresh, ACCOUNT, 1000);
  });

  it('answers 413 at once for a declared Content-Length of maxBodyBytes + 1, before any byte of the body is sent', async () => {
    const fresh = await createTrigger(t, 'echo');
    const exchange = openRaw(
      t.baseUrl,
      postHead(fresh, { 'Content-Type': 'application/json', 'X-Key': fresh.key, 'Content-Length': String(64 * 1024 + 1) }),
    );
    const answer = await exchange.answer();
    exchange.socket.destroy();
    // Waiting for the body instead would end in 408 after bodyTimeoutMs (400 ms).
    expect(answer.status).toBe(413);
    expect(answer.closedByServer).toBe(true);
    await expectNothingStored(t, [], fresh, ACCOUNT, 1000);
  });

  it('answers 408 when an authenticated body trickles past bodyTimeoutMs, closes the connection, stores nothing', async () => {
    const fresh = await createTrigger(t, 'echo');
    const exchange = openRaw(
      t.baseUrl,
      postHead(fresh, { 'Content-Type': 'application/json', 'X-Key': fresh.key, 'Content-Length': '100' }),
      '{"a":',
    );
    const answer = await exchange.answer();
    exchange.socket.destroy();
    expect(answer.status).toBe(408);
    expect(answer.at).toBeGreaterThanOrEqual(350);
    expect(answer.at).toBeLessThan(2000);
    expect(answer.closedByServer).toBe(true);
    await expectNothingStored(t, [], fresh, ACCOUNT, 1000);
  });

  it('treats a client that drops mid-body as nothing worse than a debug line: no error, nothing stored, the app keeps serving', async () => {
    const fresh = await createTrigger(t, 'echo');
    const gone = () => logger.debugLines.filter((line) => line.includes(`/webhooks/${fresh.id}/trigger`)).length;
    for (let i = 0; i < 20; i++) {
      const exchange = openRaw(
        t.baseUrl,
        postHead(fresh, { 'Content-Type': 'application/json', 'X-Key': fresh.key, 'Content-Length': '1000' }),
        '{"a":"',
      );
      await sleep(20);
      exchange.socket.destroy();
    }
    // Each drop, once the app has handled it, is one debug line: wait for all 20, then nothing louder was logged.
    await until(() => gone() === 20, 2_000, 'the 20 drops to be handled');
    expect(logger.loud).toEqual([]);
    await expectNothingStored(t, [], fresh, ACCOUNT, 1000);
    expect((await triggerBot(fresh, { still: 'serving' })).status).toBe(200);
  });

  it('answers 400 for a body nested deeper than maxJsonDepth (5,000 levels once gave a 500), and accepts 64 levels', async () => {
    const fresh = await createTrigger(t, 'echo');
    const nested = (levels: number) => `{"a":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;
    const headers = { 'content-type': 'application/json', 'x-key': fresh.key };
    const deep = await rawRequest(fresh.url, { method: 'POST', headers, body: nested(5000) });
    expect(deep.status).toBe(400);
    expect(deep.body.message).toBe(BODY_TOO_DEEP(64));
    expect(logger.loud).toEqual([]);
    await expectNothingStored(t, [], fresh, ACCOUNT, 1000);
    const ok = await rawRequest(fresh.url, { method: 'POST', headers, body: nested(64) });
    expect(ok.status).toBe(200);
  });

  it.each([
    ['trigger', (id: string) => `/webhooks/${id}/trigger`, 'POST'],
    ['sync', (id: string) => `/webhooks/${id}/trigger/invocation/inv_AAAAAAAAAAAAAAAAAAAAAA/sync`, 'GET'],
  ])('answers 404 (not 400 "Failed to decode param") for an undecodable id on the %s route', async (_route, path, method) => {
    for (const bad of ['%zz', 'abc%', '%E0%A4%A']) {
      const res = await rawRequest(`${t.baseUrl}${path(bad)}`, {
        method,
        headers: { 'content-type': 'application/json', 'x-key': echo.key },
        body: method === 'POST' ? '{}' : undefined,
      });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ success: false, statusCode: 404, error: 'Not Found' });
    }
    const inv = await rawRequest(`${echo.url}/invocation/%zz/sync`, { headers: { 'x-key': echo.key } });
    expect(inv.status).toBe(404);
    expect(inv.body.message).toMatch(/^Invocation "%zz" does not exist/);
  });

  it('never shows the internal account id to callers (402)', async () => {
    await t.admin.setCredits(ACCOUNT, 0);
    const poor = await triggerBot(echo, { a: 1 });
    expectError(poor, 402);
    expect(poor.body.message).not.toContain(ACCOUNT);
    expect(poor.body.message).toMatch(/fewer than 1 credit/);
  });

  describe('query parameters in any form', () => {
    let runId: string;
    beforeAll(async () => {
      await t.admin.setCredits(ACCOUNT, 1000);
      runId = await startRun(echo, {});
      expect((await syncUntilFinished(echo, runId)).status).toBe(200);
    });

    // Repeated (a list on both adapters), the bracket forms (a list or object under Express's extended parser,
    // a key named `timeout[]` under the simple parsers both adapters use by default), empty.
    const FORMS = (name: string) => [`${name}=1&${name}=2`, `${name}[]=1`, `${name}[0]=1`, `${name}[a]=1`, `${name}=`];

    it.each(FORMS('timeout'))('answers sync ?%s with 400 and a JSON body, never a 500 or a logged stack', async (query) => {
      const res = await request(`${echo.url}/invocation/${runId}/sync?${query}`, { headers: { 'x-key': echo.key } });
      expectError(res, 400);
      expect(res.body.message).toMatch(/timeout/);
      expect(logger.loud).toEqual([]);
    });

    it.each(FORMS('after'))('answers events ?%s with 400 and a JSON body, never a 500 or a logged stack', async (query) => {
      const res = await request(`${echo.url}/invocation/${runId}/events?${query}`, { headers: { 'x-key': echo.key } });
      expectError(res, 400);
      expect(res.body.message).toMatch(/after/);
      expect(logger.loud).toEqual([]);
    });

    it('reads a parameter given once as before', async () => {
      expect((await request(`${echo.url}/invocation/${runId}/sync?timeout=1`, { headers: { 'x-key': echo.key } })).status).toBe(200);
      const events = await request(`${echo.url}/invocation/${runId}/events?after=1`, { headers: { 'x-key': echo.key } });
      expect(events.status).toBe(200);
      expect(events.text).toMatch(/event: done/);
    });
  });
});

describeOnEveryAdapterAndDatabase('the failed-key limit', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;
  let echo: TestTrigger;

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      database,
      options: { rateLimits: UNTHROTTLED, failedKeyLimit: { limit: 30, ttlMs: 60_000 } },
    });
    echo = await createTrigger(t, 'echo');
    await t.admin.setCredits(ACCOUNT, 1000);
  });
  afterAll(() => t.close());

  it('is one atomic check-and-count: of 1,000 concurrent wrong keys from one IP, exactly 30 are judged (401), the rest get 429', async () => {
    const results = await Promise.all(Array.from({ length: 1000 }, (_, i) => triggerBot({ url: echo.url, key: `whk_guess_${i}` }, {})));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(30);
    expect(statuses.filter((s) => s === 429)).toHaveLength(970);
    const blocked = results.find((r) => r.status === 429)!;
    expect(blocked.body.message).toBe(TOO_MANY_FAILED_KEYS);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Now even the right key from that IP waits: a guesser learns nothing from a 429.
    expectError(await triggerBot(echo, {}), 429);
    expect(await storedCredits(t.store, ACCOUNT)).toBe(1000);
  });
});

/** A host's own global guard that takes its time (a session look-up, say): every request waits in it before ours. */
class SlowHostGuard implements CanActivate {
  passed = 0;
  async canActivate(): Promise<boolean> {
    await sleep(150);
    this.passed += 1;
    return true;
  }
}

describeOnEveryAdapter('a client that leaves before its request reaches the handler', ({ makeAdapter, database }) => {
  const hostGuard = new SlowHostGuard();
  let t: WebhookTestApp;
  let slow: TestTrigger;
  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      database,
      options: { rateLimits: UNTHROTTLED },
      events: true,
      providers: [{ provide: APP_GUARD, useValue: hostGuard }],
    });
    slow = await createTrigger(t, 'slow');
    await t.admin.setCredits(ACCOUNT, 1000);
  });
  afterAll(() => t.close());

  // Its connection closed while the guards awaited, before any listener for it existed: once held a sync waiter for
  // the whole wait (5 minutes) and an event stream's slot until the run ended.
  it.each(['sync', 'events'])('is held nothing for on the %s route: no waiter, no event stream', async (route) => {
    const id = await startRun(slow, { ms: 5_000 });
    const passedBefore = hostGuard.passed;
    const path = new URL(`${slow.url}/invocation/${id}/${route}`).pathname;
    const head = `GET ${path} HTTP/1.1\r\nHost: ${new URL(t.baseUrl).host}\r\nX-Key: ${slow.key}\r\n\r\n`;
    const clients = Array.from({ length: 5 }, () => openRaw(t.baseUrl, head).socket);
    await sleep(30);
    for (const socket of clients) socket.destroy();
    await until(() => hostGuard.passed === passedBefore + 5, 2_000, 'the host guard to let the five requests on');
    await sleep(300); // the module's guard, the row read and the handler, for requests nobody waits for any more
    expect(t.app.get(InvocationWaiter).waiting).toBe(0);
    expect(t.app.get(RunEventStreams).count).toBe(0);
  });
});

describeOnEveryAdapter('signed bodies not verified yet (a trigger signed instead of a key)', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;
  let signed: TestTrigger;
  let secret: string;
  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      database,
      options: { rateLimits: UNTHROTTLED, failedKeyLimit: { limit: 3, ttlMs: 60_000 }, bodyTimeoutMs: 5_000 },
    });
    signed = await createTrigger(t, 'echo');
    await t.admin.setRequestSigning(signed.id, 'instead-of-key');
    secret = (await t.admin.rotateSigningSecret(signed.id))!.secret;
    await t.admin.setCredits(ACCOUNT, 1000);
  });
  afterAll(() => t.close());

  /** A signed trigger request (no X-Key: the signature is the credential) whose first `sent` bytes go out now. */
  function signedRequest(body: string, sent: number, signWith = secret): RawExchange {
    const msgId = `msg_${Math.random().toString(36).slice(2)}`;
    const at = new Date();
    const head = postHead(signed, {
      'Content-Type': 'application/json',
      'Content-Length': String(Buffer.byteLength(body)),
      Connection: 'close',
      'webhook-id': msgId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(signWith).sign(msgId, at, body),
    });
    return openRaw(t.baseUrl, head, body.slice(0, sent));
  }

  // Nothing authenticated these clients before their bodies are read: each body read could end a failure, so no more
  // are read at once from one address than the failed-key limit (once, any number: 1 MB each for bodyTimeoutMs).
  it('reads at most failedKeyLimit at once from one address: the next gets 429 before its body; one answered frees a place', async () => {
    const body = JSON.stringify({ pad: 'x'.repeat(200_000) });
    const reading = [0, 1, 2].map(() => signedRequest(body, 1_000));
    await sleep(300); // past the guards, their bodies half-sent
    const refused = await signedRequest(body, 1_000).answer();
    expect(refused.status).toBe(429);
    expect(refused.at).toBeLessThan(1_500);
    expect(JSON.parse(refused.body).message).toBe(TOO_MANY_UNVERIFIED_BODIES(3));
    for (const exchange of reading) exchange.socket.write(body.slice(1_000));
    expect((await Promise.all(reading.map((exchange) => exchange.answer()))).map((a) => a.status)).toEqual([200, 200, 200]);
    const next = signedRequest(body, 1_000);
    next.socket.write(body.slice(1_000));
    expect((await next.answer()).status).toBe(200);
  });
});
