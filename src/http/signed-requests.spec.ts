import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { RateLimitedError, SignedRequestRefusedError } from '../errors/webhook-trigger.errors.js';
import { SIGNED_REQUEST_TIMESTAMP_OUTSIDE_WINDOW, TOO_MANY_FAILED_KEYS } from '../errors/webhook-trigger.messages.js';
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

  /** A request as the sender makes it: headers signed over `body`, `skewSec` from the clock. */
  function request(body: string, skewSec = 0): RawRequest {
    const msgId = `msg_${randomBytes(6).toString('hex')}`;
    const at = new Date(clock.now() + skewSec * 1000);
    const headers = {
      'webhook-id': msgId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(SECRET).sign(msgId, at, body),
    };
    return { headers } as unknown as RawRequest;
  }

  const before = (raw: RawRequest, handler: object = Routes.prototype.trigger) => signed.beforeBody(TRIGGER, raw, handler, failures, admit);
  /** The handler's step after the body is read: verify, then accept (here: a run accepted, answered 'accepted'). */
  const accepted = () => Promise.resolve('accepted');

  it('asks X-Key and counts at once on a route not marked signed, and on a trigger that is off', async () => {
    expect(await before(request('{}'), Routes.prototype.status)).toEqual({ keyRequired: true, admitsAfterBody: false });
    const off = await signed.beforeBody(
      { ...TRIGGER, requestSigning: undefined },
      request('{}'),
      Routes.prototype.trigger,
      failures,
      admit,
    );
    expect(off).toEqual({ keyRequired: true, admitsAfterBody: false });
  });

  it('judges the timestamp on the module clock, ±300 s inclusive, before the body', async () => {
    expect(await before(request('{}', -300))).toEqual({ keyRequired: false, admitsAfterBody: true });
    expect(await before(request('{}', 300))).toEqual({ keyRequired: false, admitsAfterBody: true });
    await expect(before(request('{}', -301))).rejects.toThrow(
      new SignedRequestRefusedError(SIGNED_REQUEST_TIMESTAMP_OUTSIDE_WINDOW(301, 300)),
    );
  });

  it('counts every refusal as a failed key: past failedKeyLimit the client gets 429, before any body is read', async () => {
    await expect(before({ headers: {} } as unknown as RawRequest)).rejects.toBeInstanceOf(SignedRequestRefusedError);
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
    const again = { headers: raw.headers } as unknown as RawRequest;
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
    const retry = { headers: raw.headers } as unknown as RawRequest;
    await before(retry);
    expect(await signed.acceptSigned(retry, Buffer.from('{"ok":true}'), accepted)).toBe('accepted');
    // Accepted, the id is spent: a third copy is a replay.
    const replay = { headers: raw.headers } as unknown as RawRequest;
    await before(replay);
    await expect(signed.acceptSigned(replay, Buffer.from('{"ok":true}'), accepted)).rejects.toBeInstanceOf(SignedRequestRefusedError);
  });

  it('a request that fails its signature never reaches the accept step and gives back nothing it did not spend', async () => {
    const genuine = request('{"ok":true}');
    const forged = { headers: genuine.headers } as unknown as RawRequest;
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
});
