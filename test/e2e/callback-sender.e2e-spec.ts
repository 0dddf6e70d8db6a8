import type { LookupAddress } from 'node:dns';
import { Webhook } from 'standardwebhooks';
import { sendCallback, type CallbackRequest } from '../../src/callbacks/callback-sender.js';
import { generateCallbackSecret, generateMessageId, webhookHeaders } from '../../src/callbacks/standard-webhooks.js';
import { startCallbackReceiver, type CallbackReceiver } from '../helpers/callback-receiver.js';

// The SSRF-safe sender against real local HTTP servers: what a receiver gets, how each kind of answer is
// reported, and which hosts are refused before any byte is sent.

const ALLOW_LOCAL = ['127.0.0.1'];
const body = JSON.stringify({ type: 'invocation.completed', timestamp: new Date().toISOString(), data: { invocation: { id: 'inv_1' } } });

describe('sendCallback to a real receiver', () => {
  let receiver: CallbackReceiver;
  const send = (fields: Partial<CallbackRequest> = {}) =>
    sendCallback({ url: `${receiver.origin}/hook`, headers: {}, body, allowedHosts: ALLOW_LOCAL, ...fields });

  beforeEach(async () => {
    receiver = await startCallbackReceiver();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('delivers a POST with the exact body and headers, which the standardwebhooks package verifies', async () => {
    const secret = generateCallbackSecret();
    const headers = webhookHeaders(secret, generateMessageId(), Math.floor(Date.now() / 1000), body);
    const result = await send({ headers: { ...headers } });
    expect(result).toMatchObject({ ok: true, outcome: 'delivered', status: 200 });
    expect(result.error).toBeUndefined();
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    expect(result.latencyMs).toBeLessThan(1000);
    expect(receiver.received).toHaveLength(1);
    const [call] = receiver.received;
    expect(call).toMatchObject({ method: 'POST', path: '/hook' });
    expect(call.headers['content-type']).toBe('application/json');
    expect(call.body.toString()).toBe(body);
    expect(new Webhook(secret).verify(call.body, call.headers as Record<string, string>)).toEqual(JSON.parse(body));
  });

  it('reports a 500 as a failure with its status', async () => {
    receiver.respond((res) => res.writeHead(500).end('boom'));
    expect(await send()).toMatchObject({ ok: false, outcome: 'failed', status: 500, error: 'The callback receiver answered 500' });
  });

  it('reports a 410 distinctly (the callback is to be disabled)', async () => {
    receiver.respond((res) => res.writeHead(410).end());
    expect(await send()).toMatchObject({ ok: false, outcome: 'gone', status: 410 });
  });

  it('reads Retry-After on 429 (seconds) and 503 (an HTTP date), not on other statuses', async () => {
    receiver.respond((res) => res.writeHead(429, { 'Retry-After': '7' }).end());
    expect(await send()).toMatchObject({ ok: false, outcome: 'failed', status: 429, retryAfterSec: 7 });
    receiver.respond((res) => res.writeHead(503, { 'Retry-After': new Date(Date.now() + 120_000).toUTCString() }).end());
    const later = await send();
    expect(later).toMatchObject({ status: 503 });
    expect(later.retryAfterSec).toBeGreaterThanOrEqual(118);
    expect(later.retryAfterSec).toBeLessThanOrEqual(120);
    receiver.respond((res) => res.writeHead(500, { 'Retry-After': '7' }).end());
    expect((await send()).retryAfterSec).toBeUndefined();
  });

  it('times out a receiver that never answers, within the timeout', async () => {
    receiver.respond(() => undefined);
    const t0 = performance.now();
    const result = await send({ timeoutMs: 300 });
    const elapsed = performance.now() - t0;
    expect(result).toMatchObject({ ok: false, outcome: 'failed', error: 'The callback receiver did not answer within 300 ms' });
    expect(result.status).toBeUndefined();
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1000);
  });

  it('does not follow a redirect: a 3xx is a failure with its status, and the target is never called', async () => {
    const target = await startCallbackReceiver();
    try {
      receiver.respond((res) => res.writeHead(302, { Location: `${target.origin}/elsewhere` }).end());
      const result = await send();
      expect(result).toMatchObject({ ok: false, outcome: 'failed', status: 302 });
      expect(result.error).toContain('redirects are not followed');
      expect(target.received).toHaveLength(0);
    } finally {
      await target.close();
    }
  });

  it('reads at most 64 KiB of an answer: an endless 200 is delivered at once, not timed out', async () => {
    receiver.respond((res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    const result = await send({ timeoutMs: 2000 });
    expect(result).toMatchObject({ ok: true, outcome: 'delivered', status: 200 });
    expect(result.latencyMs).toBeLessThan(1000);
  });

  it('reports a closed port as a network failure', async () => {
    const closed = await startCallbackReceiver();
    const url = `${closed.origin}/hook`;
    await closed.close();
    const result = await send({ url });
    expect(result).toMatchObject({ ok: false, outcome: 'failed' });
    expect(result.error).toMatch(/^The callback could not be delivered: .*ECONNREFUSED/);
  });
});

describe('sendCallback SSRF protection', () => {
  let receiver: CallbackReceiver;
  beforeEach(async () => {
    receiver = await startCallbackReceiver();
  });
  afterEach(async () => {
    await receiver.close();
  });

  const to = (url: string, fields: Partial<CallbackRequest> = {}) => sendCallback({ url, headers: {}, body, ...fields });

  it.each([
    ['127.0.0.1', (port: number) => `http://127.0.0.1:${port}/hook`, /127\.0\.0\.1 is a loopback address/],
    ['localhost', (port: number) => `http://localhost:${port}/hook`, /"localhost" is a loopback name/],
    ['[::1]', (port: number) => `http://[::1]:${port}/hook`, /::1 is a loopback address/],
    ['10.x', () => 'http://10.0.0.1/hook', /10\.0\.0\.1 is a private address/],
    ['the metadata address', () => 'http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 is a link-local address/],
    ['an IPv4-mapped loopback', (port: number) => `http://[::ffff:127.0.0.1]:${port}/hook`, /loopback address/],
  ])('refuses %s when not allowed, sending nothing', async (_name, url, message) => {
    const result = await to(url(receiver.port), { timeoutMs: 1000 });
    expect(result).toMatchObject({ ok: false, outcome: 'refused' });
    expect(result.error).toMatch(message);
    expect(receiver.received).toHaveLength(0);
  });

  it('refuses a host name that resolves to 127.0.0.1 (a public-looking name is no pass)', async () => {
    const resolve = async (): Promise<LookupAddress[]> => [{ address: '127.0.0.1', family: 4 }];
    const result = await to(`http://receiver.test:${receiver.port}/hook`, { resolve });
    expect(result).toMatchObject({ ok: false, outcome: 'refused' });
    expect(result.error).toMatch(/"receiver\.test" resolves to 127\.0\.0\.1, which is a loopback address/);
    expect(receiver.received).toHaveLength(0);
  });

  it('refuses a name when one of its addresses is private, even if another is public', async () => {
    const resolve = async (): Promise<LookupAddress[]> => [
      { address: '93.184.215.14', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
    expect(await to(`http://mixed.test:${receiver.port}/hook`, { resolve })).toMatchObject({ outcome: 'refused' });
    expect(receiver.received).toHaveLength(0);
  });

  it('delivers to 127.0.0.1 and to localhost once they are in allowedHosts', async () => {
    expect(await to(`http://127.0.0.1:${receiver.port}/hook`, { allowedHosts: ['127.0.0.1'] })).toMatchObject({ ok: true, status: 200 });
    // localhost through the system resolver (it may answer ::1 first; the receiver listens on 127.0.0.1).
    expect(await to(`http://localhost:${receiver.port}/hook`, { allowedHosts: ['localhost'], timeoutMs: 3000 })).toMatchObject({
      ok: true,
    });
    expect(receiver.received).toHaveLength(2);
    // Allowing the address does not allow a name that resolves to it.
    const viaName = await to(`http://receiver.test:${receiver.port}/hook`, {
      allowedHosts: ['127.0.0.1'],
      resolve: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    expect(viaName).toMatchObject({ outcome: 'refused' });
  });

  it('connects to the address it checked: the name is resolved once, and a second answer (rebinding) is never used', async () => {
    // receiver.test is unknown to the system resolver: the delivery arriving proves the connection used ours.
    // The first answer is the receiver; any later one would be a private address of the attacker's choosing.
    const answers: LookupAddress[][] = [[{ address: '127.0.0.1', family: 4 }], [{ address: '10.9.9.9', family: 4 }]];
    const resolve = jest.fn(async () => answers.shift() ?? []);
    const result = await to(`http://receiver.test:${receiver.port}/pinned`, { allowedHosts: ['receiver.test'], resolve, timeoutMs: 2000 });
    expect(result).toMatchObject({ ok: true, status: 200 });
    expect(resolve).toHaveBeenCalledTimes(1);
    expect(receiver.received.map((r) => [r.path, r.headers.host])).toEqual([['/pinned', `receiver.test:${receiver.port}`]]);
  });
});
