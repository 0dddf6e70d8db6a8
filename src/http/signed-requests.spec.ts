import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Webhook } from 'standardwebhooks';
import { RateLimitedError, SignedRequestRefusedError } from '../errors/webhook-trigger.errors.js';
import {
  SIGNED_REQUEST_TIMESTAMP_OUTSIDE_WINDOW,
  TOO_MANY_FAILED_KEYS,
  TOO_MANY_UNVERIFIED_BODIES,
} from '../errors/webhook-trigger.messages.js';
import { InMemoryWebhookStorage } from '../persistence/memory/in-memory-webhook-storage.js';
import type { TriggerRecord } from '../persistence/records.js';
import { ManualClock, rateLimitStorageOn } from '../../test/fakes/manual-clock.js';
import { signedRequestsOn } from '../../test/fakes/signed-requests.js';
import type { RawRequest } from './http.types.js';
import { SignedRoute, type SignedRequests } from './signed-requests.js';

class Routes {
  @SignedRoute()
  trigger(): void {}
  status(): void {}
}

const SECRET = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
const TRIGGER: TriggerRecord = {
  id: 'trg_SIGNEDSPECAAAAAA',
  botId: 'echo',
  accountId: 'acct',
  name: 'signed',
  type: 'webhook',
  keys: [],
  createdAt: new Date(0),
  requestSigning: 'instead-of-key',
};

describe('SignedRequests (the checks behind TriggerKeyGuard and the trigger handler)', () => {
  const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
  let storage: InstanceType<ReturnType<typeof rateLimitStorageOn>>;
  let signed: SignedRequests;
  let admitted: number;
  const failures = { key: 'failed-key:203.0.113.7', ttl: 60_000, limit: 2 };
  const admit = () => {
    admitted++;
    return Promise.resolve();
  };

  beforeEach(async () => {
    clock.set(Date.parse('2026-05-01T00:00:00Z'));
    storage = new (rateLimitStorageOn(clock))();
    const store = new InMemoryWebhookStorage();
    await store.signing.insertSecret({
      id: 'sgs_1',
      triggerId: TRIGGER.id,
      secret: SECRET,
      createdAt: new Date(0),
      expiresAt: null,
      revokedAt: null,
    });
    signed = signedRequestsOn(storage, store, clock);
    admitted = 0;
  });
  afterEach(() => storage.onModuleDestroy());

  /** A request with `headers`: what the checks read of it (its headers, and its `close` at the end of the exchange). */
  const withHeaders = (headers: RawRequest['headers']): RawRequest =>
    Object.assign(new EventEmitter(), { headers, destroyed: false }) as unknown as RawRequest;

  /** A request as the sender makes it: headers signed over `body`, `skewSec` from the clock. */
  function request(body: string, skewSec = 0): RawRequest {
    const msgId = `msg_${randomBytes(6).toString('hex')}`;
    const at = new Date(clock.now() + skewSec * 1000);
    return withHeaders({
      'webhook-id': msgId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(SECRET).sign(msgId, at, body),
    });
  }

  /** The header checks of an `instead-of-key` trigger's request. */
  const before = (raw: RawRequest) => signed.beforeBody(TRIGGER, raw, true, failures, admit);
  /** The handler's step after the body is read: verify, then accept (here: a run accepted, answered 'accepted'). */
  const accepted = () => Promise.resolve('accepted');

  it("applies a trigger's signing on the route marked signed only; a trigger without one is off", () => {
    expect(signed.signingOf(TRIGGER, Routes.prototype.trigger)).toBe('instead-of-key');
    expect(signed.signingOf(TRIGGER, Routes.prototype.status)).toBe('off');
    expect(signed.signingOf({ ...TRIGGER, requestSigning: undefined }, Routes.prototype.trigger)).toBe('off');
  });

  it('judges the timestamp on the module clock, ±300 s inclusive, before the body', async () => {
    await expect(before(request('{}', -300))).resolves.toBeUndefined();
    await expect(before(request('{}', 300))).resolves.toBeUndefined();
    await expect(before(request('{}', -301))).rejects.toThrow(
      new SignedRequestRefusedError(SIGNED_REQUEST_TIMESTAMP_OUTSIDE_WINDOW(301, 300)),
    );
  });

  it('counts every refusal as a failed key: past failedKeyLimit the client gets 429, before any body is read', async () => {
    await expect(before(withHeaders({}))).rejects.toBeInstanceOf(SignedRequestRefusedError);
    const forged = request('{"a":1}');
    await before(forged);
    await expect(signed.acceptSigned(forged, Buffer.from('{"a":2}'), accepted)).rejects.toBeInstanceOf(SignedRequestRefusedError);
    // Two failures: the window is full, so even a well-signed request is refused from its headers.
    const good = request('{}');
    await expect(before(good)).rejects.toThrow(new RateLimitedError('client', 60, TOO_MANY_FAILED_KEYS));
    expect(admitted).toBe(0);
  });

  it('counts a verified request once (instead-of-key), then remembers its id; a replay is refused after it was counted (it carries a valid signature)', async () => {
    const raw = request('{"ok":true}');
    await before(raw);
    expect(await signed.acceptSigned(raw, Buffer.from('{"ok":true}'), accepted)).toBe('accepted');
    expect(admitted).toBe(1);
    const again = withHeaders(raw.headers);
    await before(again);
    await expect(signed.acceptSigned(again, Buffer.from('{"ok":true}'), accepted)).rejects.toBeInstanceOf(SignedRequestRefusedError);
    // Counted before the id is checked, so a request refused by a limit (429) keeps its id for its retry.
    expect(admitted).toBe(2);
  });

  it('gives the webhook-id back when no run is accepted (the accept step throws): the retry with the same id is taken', async () => {
    const raw = request('{"ok":true}');
    await before(raw);
    const refused = new Error('402: not enough credits');
    await expect(signed.acceptSigned(raw, Buffer.from('{"ok":true}'), () => Promise.reject(refused))).rejects.toBe(refused);
    const retry = withHeaders(raw.headers);
    await before(retry);
    expect(await signed.acceptSigned(retry, Buffer.from('{"ok":true}'), accepted)).toBe('accepted');
    // Accepted, the id is spent: a third copy is a replay.
    const replay = withHeaders(raw.headers);
    await before(replay);
    await expect(signed.acceptSigned(replay, Buffer.from('{"ok":true}'), accepted)).rejects.toBeInstanceOf(SignedRequestRefusedError);
  });

  it('a request that fails its signature never reaches the accept step and gives back nothing it did not spend', async () => {
    const genuine = request('{"ok":true}');
    const forged = withHeaders(genuine.headers);
    await before(forged);
    let reached = false;
    const accept = () => {
      reached = true;
      return accepted();
    };
    await expect(signed.acceptSigned(forged, Buffer.from('{"ok":false}'), accept)).rejects.toBeInstanceOf(SignedRequestRefusedError);
    expect(reached).toBe(false);
    await before(genuine);
    expect(await signed.acceptSigned(genuine, Buffer.from('{"ok":true}'), accept)).toBe('accepted');
  });

  it('reads at most failedKeyLimit bodies of one address not verified yet: the next is 429 from its headers; judged or closed, a place is free', async () => {
    const first = request('{"n":1}');
    const second = request('{"n":2}');
    await before(first);
    await before(second);
    await expect(before(request('{"n":3}'))).rejects.toThrow(new RateLimitedError('client', 1, TOO_MANY_UNVERIFIED_BODIES(2)));
    // Another address is not held back.
    await expect(
      signed.beforeBody(TRIGGER, request('{}'), true, { ...failures, key: 'failed-key:198.51.100.1' }, admit),
    ).resolves.toBeUndefined();
    expect(await signed.acceptSigned(first, Buffer.from('{"n":1}'), accepted)).toBe('accepted'); // verified: its place is free
    const third = request('{"n":3}');
    await before(third);
    await expect(before(request('{"n":4}'))).rejects.toBeInstanceOf(RateLimitedError);
    second.emit('close'); // the exchange ended before its signature was judged (a client gone, a 413)
    second.emit('close');
    await before(request('{"n":4}'));
    await expect(before(request('{"n":5}'))).rejects.toBeInstanceOf(RateLimitedError);
  });
});
