import { InvalidKeyError, RateLimitedError, UnknownTriggerError } from '../errors/webhook-trigger.errors.js';
import { INVALID_KEY, MISSING_KEY, TOO_MANY_FAILED_KEYS, UNKNOWN_TRIGGER } from '../errors/webhook-trigger.messages.js';
import { newTriggerId } from '../keys/ids.js';
import { generateTriggerKey } from '../keys/trigger-keys.js';
import { resolveWebhookTriggerOptions } from '../options/resolve-options.js';
import type { TriggerRecord } from '../persistence/records.js';
import { InMemoryRateLimitStorage } from '../rate-limits/in-memory-rate-limit.storage.js';
import { InMemoryWebhookDatabase } from '../persistence/memory/in-memory-database.js';
import { expressRequest, fastifyRequest, httpContext } from '../../test/fakes/http-context.js';
import { InMemoryTriggerRepository } from '../persistence/memory/in-memory-trigger.repository.js';
import { AUTHENTICATED_TRIGGER, rawRequestOf } from './http.types.js';
import { TriggerKeyGuard } from './trigger-key.guard.js';
import { TriggerKeyCheck } from './trigger-key-check.js';
import { SYSTEM_CLOCK } from '../time/clock.js';
import { triggerKeyRecord } from '../../test/fakes/trigger-keys.js';
import { signedRequestsOn } from '../../test/fakes/signed-requests.js';
import { InMemoryClusterBus } from '../cluster/in-memory-cluster.bus.js';
import { TriggerCache } from '../invocations/trigger-cache.js';

/** A trigger store that counts look-ups: an id that cannot exist must not cost one. */
class CountingTriggerRepository extends InMemoryTriggerRepository {
  lookups = 0;
  override findActive(id: string): Promise<TriggerRecord | null> {
    this.lookups++;
    return super.findActive(id);
  }
}

describe('TriggerKeyGuard', () => {
  let triggers: CountingTriggerRepository;
  let storage: InMemoryRateLimitStorage;
  let guard: TriggerKeyGuard;
  let trigger: TriggerRecord;
  let key: string;

  beforeEach(async () => {
    key = generateTriggerKey();
    const id = newTriggerId();
    trigger = {
      id,
      botId: 'echo',
      accountId: 'acct',
      name: 'echo trigger',
      type: 'webhook',
      keys: [triggerKeyRecord(id, key)],
      createdAt: new Date(),
    };
    triggers = new CountingTriggerRepository(new InMemoryWebhookDatabase());
    await triggers.create(trigger);
    storage = new InMemoryRateLimitStorage();
    // Limits per trigger and account high enough not to answer first (trigger-key.guard.limits.spec.ts tests them).
    const rateLimits = { perTrigger: { limit: 1000, ttlMs: 60_000 }, perAccount: { limit: 1000, ttlMs: 60_000 } };
    guard = new TriggerKeyGuard(
      triggers,
      storage,
      resolveWebhookTriggerOptions({ failedKeyLimit: { limit: 3, ttlMs: 60_000 }, rateLimits }),
      new TriggerKeyCheck(triggers, SYSTEM_CLOCK),
      signedRequestsOn(storage),
    );
  });

  afterEach(() => storage.onModuleDestroy());

  /** Runs the guard on a request, answering true or the error it threw. */
  const check = (request: object) => guard.canActivate(httpContext(request)).catch((e: unknown) => e);

  it('lets a request with the right key through and leaves the trigger on the request', async () => {
    const request = expressRequest(trigger.id, { 'x-key': key });
    expect(await check(request)).toBe(true);
    expect(rawRequestOf(request)[AUTHENTICATED_TRIGGER]).toEqual(trigger);
  });

  it('reads the key from the Node request under a Fastify request', async () => {
    const request = fastifyRequest(trigger.id, { 'x-key': key });
    expect(await check(request)).toBe(true);
    expect(rawRequestOf(request)[AUTHENTICATED_TRIGGER]?.id).toBe(trigger.id);
  });

  it('answers 404 for an id that cannot exist, without looking it up', async () => {
    for (const id of ['nope', 'trg_short', `${trigger.id}x`, 'trg_../../etc/passwd']) {
      const error = await check(expressRequest(id, { 'x-key': key }));
      expect(error).toBeInstanceOf(UnknownTriggerError);
      expect((error as Error).message).toBe(UNKNOWN_TRIGGER(id));
    }
    expect(triggers.lookups).toBe(0);
  });

  it('answers 404 for a well-formed id that is unknown or deleted, before judging the key', async () => {
    expect(await check(expressRequest('trg_AAAAAAAAAAAAAAAA', { 'x-key': key }))).toBeInstanceOf(UnknownTriggerError);
    await triggers.delete(trigger.id);
    expect(await check(expressRequest(trigger.id, { 'x-key': key }))).toBeInstanceOf(UnknownTriggerError);
    expect(await check(expressRequest(trigger.id))).toBeInstanceOf(UnknownTriggerError);
  });

  it('answers 401 for a missing or wrong key', async () => {
    const missing = await check(expressRequest(trigger.id));
    expect(missing).toBeInstanceOf(InvalidKeyError);
    expect(missing).toMatchObject({ missing: true, message: MISSING_KEY });
    const empty = await check(expressRequest(trigger.id, { 'x-key': '' }));
    expect(empty).toMatchObject({ missing: true, message: MISSING_KEY });
    const wrong = await check(expressRequest(trigger.id, { 'x-key': key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A') }));
    expect(wrong).toBeInstanceOf(InvalidKeyError);
    expect(wrong).toMatchObject({ missing: false, message: INVALID_KEY });
  });

  it('refuses (429) an address with too many failed keys before its key is even looked at, even the right one', async () => {
    for (let i = 0; i < 3; i++)
      expect(await check(expressRequest(trigger.id, { 'x-key': 'whk_wrong' }, '198.51.100.1'))).toBeInstanceOf(InvalidKeyError);
    const blocked = await check(expressRequest(trigger.id, { 'x-key': key }, '198.51.100.1'));
    expect(blocked).toBeInstanceOf(RateLimitedError);
    expect((blocked as RateLimitedError).message).toBe(TOO_MANY_FAILED_KEYS);
    expect((blocked as RateLimitedError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect((blocked as RateLimitedError).retryAfterSeconds).toBeLessThanOrEqual(60);
    // Another address is not affected.
    expect(await check(expressRequest(trigger.id, { 'x-key': key }, '198.51.100.2'))).toBe(true);
  });

  it('counts only failed checks against an address', async () => {
    for (let i = 0; i < 10; i++) expect(await check(expressRequest(trigger.id, { 'x-key': key }, '198.51.100.3'))).toBe(true);
    for (let i = 0; i < 2; i++) await check(expressRequest(trigger.id, {}, '198.51.100.3'));
    expect(await check(expressRequest(trigger.id, { 'x-key': key }, '198.51.100.3'))).toBe(true);
  });

  it("counts an address by the socket's when the adapter gives no ip", async () => {
    const noIp = (socketAddress: string, headers: Record<string, string>) => ({
      params: { triggerId: trigger.id },
      headers,
      socket: { remoteAddress: socketAddress },
    });
    for (let i = 0; i < 3; i++) await check(noIp('192.0.2.9', { 'x-key': 'whk_wrong' }));
    expect(await check(noIp('192.0.2.9', { 'x-key': key }))).toBeInstanceOf(RateLimitedError);
    expect(await check(noIp('192.0.2.10', { 'x-key': key }))).toBe(true);
  });

  it("looks triggers up through the module's cache when given one: a rotated key is refused once the bus says so", async () => {
    class FleetBus extends InMemoryClusterBus {
      override get carriesTriggerChanges(): boolean {
        return true;
      }
    }
    const bus = new FleetBus();
    const cache = new TriggerCache(triggers, bus, SYSTEM_CLOCK, { triggerCacheTtlMs: 30_000 });
    guard = new TriggerKeyGuard(
      cache,
      storage,
      resolveWebhookTriggerOptions(),
      new TriggerKeyCheck(triggers, SYSTEM_CLOCK),
      signedRequestsOn(storage),
    );
    for (let i = 0; i < 3; i++) expect(await check(expressRequest(trigger.id, { 'x-key': key }))).toBe(true);
    expect(triggers.lookups).toBe(1);
    const newKey = generateTriggerKey();
    // A rotation with no grace: the old key ends now.
    await triggers.addKey(triggerKeyRecord(trigger.id, newKey), { now: new Date(), maxUsable: 10, othersExpireAt: new Date() });
    await bus.announceTriggerChanged(trigger.id);
    expect(await check(expressRequest(trigger.id, { 'x-key': key }))).toBeInstanceOf(InvalidKeyError);
    expect(await check(expressRequest(trigger.id, { 'x-key': newKey }))).toBe(true);
    expect(triggers.lookups).toBe(2);
    cache.onModuleDestroy();
  });
});
