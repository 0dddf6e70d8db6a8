import { InvalidKeyError, RateLimitedError } from '../errors/webhook-trigger.errors.js';
import { RATE_LIMITED, TOO_MANY_FAILED_KEYS } from '../errors/webhook-trigger.messages.js';
import { generateTriggerKey } from '../keys/trigger-keys.js';
import { resolveWebhookTriggerOptions } from '../options/resolve-options.js';
import type { WebhookTriggerModuleOptions } from '../options/webhook-trigger-options.interface.js';
import type { TriggerRecord } from '../persistence/records.js';
import type { InMemoryRateLimitStorage } from '../rate-limits/in-memory-rate-limit.storage.js';
import type { AdmissionRequest } from '../rate-limits/rate-limit.storage.js';
import { expressRequest, fastifyRequest, httpContext } from '../../test/fakes/http-context.js';
import { InMemoryWebhookDatabase } from '../persistence/memory/in-memory-database.js';
import { InMemoryTriggerRepository } from '../persistence/memory/in-memory-trigger.repository.js';
import { ManualClock, rateLimitStorageOn } from '../../test/fakes/manual-clock.js';
import { TriggerKeyGuard } from './trigger-key.guard.js';
import { TriggerKeyCheck } from './trigger-key-check.js';
import { SYSTEM_CLOCK } from '../time/clock.js';
import { triggerKeyRecord } from '../../test/fakes/trigger-keys.js';
import { signedRequestsOn } from '../../test/fakes/signed-requests.js';

/** The windows' time: it moves when a test moves it. */
const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));

/** The in-process storage on that clock, counting the calls a request makes to it. */
class CountingStorage extends rateLimitStorageOn(clock) {
  calls: string[] = [];
  override increment(...args: Parameters<InMemoryRateLimitStorage['increment']>) {
    this.calls.push('increment');
    return super.increment(...args);
  }
  override checkFailures(...args: Parameters<InMemoryRateLimitStorage['checkFailures']>) {
    this.calls.push('checkFailures');
    return super.checkFailures(...args);
  }
  override admit<Name extends string>(request: AdmissionRequest<Name>) {
    this.calls.push('admit');
    return super.admit(request);
  }
}

describe('TriggerKeyGuard: rate limits per trigger and per account', () => {
  let storage: CountingStorage;
  let triggers: InMemoryTriggerRepository;
  let keyGuard: TriggerKeyGuard;
  const keys = new Map<string, string>();

  async function setUp(options: WebhookTriggerModuleOptions): Promise<void> {
    storage = new CountingStorage();
    triggers = new InMemoryTriggerRepository(new InMemoryWebhookDatabase());
    keyGuard = new TriggerKeyGuard(
      triggers,
      storage,
      resolveWebhookTriggerOptions(options),
      new TriggerKeyCheck(triggers, SYSTEM_CLOCK),
      signedRequestsOn(storage),
    );
  }

  let n = 0;
  async function addTrigger(accountId: string): Promise<TriggerRecord> {
    const key = generateTriggerKey();
    const id = `trg_${String(++n).padStart(16, '0')}`;
    const trigger: TriggerRecord = {
      id,
      botId: 'echo',
      accountId,
      name: 't',
      type: 'webhook',
      keys: [triggerKeyRecord(id, key)],
      createdAt: new Date(),
    };
    await triggers.create(trigger);
    keys.set(trigger.id, key);
    return trigger;
  }

  /** Runs the guard on a request, answering true or the error it threw. */
  async function call(trigger: TriggerRecord, key = keys.get(trigger.id)!, shape = expressRequest, ip?: string): Promise<unknown> {
    return keyGuard.canActivate(httpContext(shape(trigger.id, { 'x-key': key }, ip))).catch((error: unknown) => error);
  }

  afterEach(() => storage.onModuleDestroy());

  it('limits each trigger on its own (429 for the trigger), with a Retry-After within the window', async () => {
    await setUp({ rateLimits: { perTrigger: { limit: 2, ttlMs: 60_000 }, perAccount: { limit: 100, ttlMs: 60_000 } } });
    const a = await addTrigger('acct');
    const b = await addTrigger('acct');
    expect(await call(a)).toBe(true);
    expect(await call(a, undefined, fastifyRequest)).toBe(true);
    const refused = await call(a);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).message).toBe(RATE_LIMITED('trigger'));
    expect((refused as RateLimitedError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect((refused as RateLimitedError).retryAfterSeconds).toBeLessThanOrEqual(60);
    expect(await call(b)).toBe(true);
  });

  it('limits all triggers of one account together (429 for the account); other accounts go on', async () => {
    await setUp({ rateLimits: { perTrigger: { limit: 100, ttlMs: 60_000 }, perAccount: { limit: 3, ttlMs: 60_000 } } });
    const a = await addTrigger('acct');
    const b = await addTrigger('acct');
    const other = await addTrigger('other-acct');
    expect([await call(a), await call(b), await call(a)]).toEqual([true, true, true]);
    const refused = await call(b);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).message).toBe(RATE_LIMITED('account'));
    expect(await call(other)).toBe(true);
  });

  it("counts only requests that passed the key check: wrong keys never spend a trigger's budget", async () => {
    await setUp({
      rateLimits: { perTrigger: { limit: 2, ttlMs: 60_000 }, perAccount: { limit: 2, ttlMs: 60_000 } },
      failedKeyLimit: { limit: 100, ttlMs: 60_000 },
    });
    const a = await addTrigger('acct');
    for (let i = 0; i < 5; i++) expect(await call(a, 'whk_wrong')).toBeInstanceOf(InvalidKeyError);
    expect([await call(a), await call(a)]).toEqual([true, true]);
    expect(await call(a)).toBeInstanceOf(RateLimitedError);
  });

  it('lets requests through again once the window has passed, not a millisecond before', async () => {
    await setUp({ rateLimits: { perTrigger: { limit: 1, ttlMs: 10_000 }, perAccount: { limit: 100, ttlMs: 60_000 } } });
    const a = await addTrigger('acct');
    expect(await call(a)).toBe(true);
    expect(await call(a)).toBeInstanceOf(RateLimitedError);
    clock.advance(9_999);
    expect(await call(a)).toMatchObject({ message: RATE_LIMITED('trigger'), retryAfterSeconds: 1 });
    clock.advance(1);
    expect(await call(a)).toBe(true);
  });

  it("a refusal by the account does not count in the trigger's own limit (nor the reverse)", async () => {
    await setUp({ rateLimits: { perTrigger: { limit: 2, ttlMs: 60_000 }, perAccount: { limit: 3, ttlMs: 10_000 } } });
    const a = await addTrigger('acct');
    const b = await addTrigger('acct');
    expect([await call(b), await call(b), await call(a)]).toEqual([true, true, true]); // the account is full
    for (let i = 0; i < 5; i++) expect(await call(a)).toMatchObject({ message: RATE_LIMITED('account') });
    clock.advance(10_000); // the account's window frees
    // a was counted once: it has one more of its 2, then its own limit refuses (and not the account's).
    expect(await call(a)).toBe(true);
    const refused = await call(a);
    expect(refused).toMatchObject({ message: RATE_LIMITED('trigger') });
    expect((refused as RateLimitedError).retryAfterSeconds).toBe(50); // a's first hit, 10 s ago, leaves in 50 s
    expect(await call(b)).toMatchObject({ message: RATE_LIMITED('trigger') });
    // Those two refusals by the triggers did not count in the account: it holds a's one hit, so two more fit.
    const c = await addTrigger('acct');
    const d = await addTrigger('acct');
    expect([await call(c), await call(d)]).toEqual([true, true]);
    expect(await call(d)).toMatchObject({ message: RATE_LIMITED('account') });
  });

  it('answers too many failed keys (429, its Retry-After) before the limits, counting nothing in them', async () => {
    await setUp({
      rateLimits: { perTrigger: { limit: 1, ttlMs: 60_000 }, perAccount: { limit: 1, ttlMs: 60_000 } },
      failedKeyLimit: { limit: 2, ttlMs: 30_000 },
    });
    const a = await addTrigger('acct');
    for (let i = 0; i < 2; i++) expect(await call(a, 'whk_wrong', expressRequest, '198.51.100.9')).toBeInstanceOf(InvalidKeyError);
    const refused = await call(a, undefined, expressRequest, '198.51.100.9');
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(refused).toMatchObject({ message: TOO_MANY_FAILED_KEYS, retryAfterSeconds: 30 });
    clock.advance(30_000);
    expect(await call(a, undefined, expressRequest, '198.51.100.9')).toBe(true); // the limits were untouched
  });

  it('costs one storage call per request: admit for a right key, checkFailures for a wrong one', async () => {
    await setUp({});
    const a = await addTrigger('acct');
    storage.calls = [];
    expect(await call(a)).toBe(true);
    expect(storage.calls).toEqual(['admit']);
    storage.calls = [];
    expect(await call(a, 'whk_wrong')).toBeInstanceOf(InvalidKeyError);
    expect(storage.calls).toEqual(['checkFailures']);
  });
});
