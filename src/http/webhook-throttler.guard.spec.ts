import { Reflector } from '@nestjs/core';
import { InvalidKeyError, RateLimitedError } from '../errors/webhook-trigger.errors.js';
import { RATE_LIMITED } from '../errors/webhook-trigger.messages.js';
import { generateTriggerKey, hashTriggerKey } from '../keys/trigger-keys.js';
import { resolveWebhookTriggerOptions } from '../options/resolve-options.js';
import type { WebhookTriggerModuleOptions } from '../options/webhook-trigger-options.interface.js';
import type { TriggerRecord } from '../persistence/records.js';
import { InMemoryRateLimitStorage } from '../rate-limits/in-memory-rate-limit.storage.js';
import { expressRequest, fastifyRequest, httpContext } from '../../test/fakes/http-context.js';
import { InMemoryWebhookDatabase } from '../../test/fakes/in-memory-database.js';
import { InMemoryTriggerRepository } from '../../test/fakes/in-memory-trigger.repository.js';
import { TriggerKeyGuard } from './trigger-key.guard.js';
import { WebhookThrottlerGuard } from './webhook-throttler.guard.js';

describe('WebhookThrottlerGuard', () => {
  let storage: InMemoryRateLimitStorage;
  let triggers: InMemoryTriggerRepository;
  let keyGuard: TriggerKeyGuard;
  let throttler: WebhookThrottlerGuard;
  const keys = new Map<string, string>();

  async function setUp(options: WebhookTriggerModuleOptions): Promise<void> {
    const resolved = resolveWebhookTriggerOptions(options);
    storage = new InMemoryRateLimitStorage();
    triggers = new InMemoryTriggerRepository(new InMemoryWebhookDatabase());
    keyGuard = new TriggerKeyGuard(triggers, storage, resolved);
    throttler = new WebhookThrottlerGuard(resolved, storage, new Reflector());
    await throttler.onModuleInit();
  }

  let n = 0;
  async function addTrigger(accountId: string): Promise<TriggerRecord> {
    const key = generateTriggerKey();
    const trigger: TriggerRecord = {
      id: `trg_${String(++n).padStart(16, '0')}`,
      botId: 'echo',
      accountId,
      name: 't',
      type: 'webhook',
      keyHash: hashTriggerKey(key),
      keyCiphertext: null,
      createdAt: new Date(),
    };
    await triggers.create(trigger);
    keys.set(trigger.id, key);
    return trigger;
  }

  /** The guards in the order the controller declares them: the key first, then the limits. */
  async function call(trigger: TriggerRecord, key = keys.get(trigger.id)!, shape = expressRequest): Promise<unknown> {
    const context = httpContext(shape(trigger.id, { 'x-key': key }));
    try {
      return (await keyGuard.canActivate(context)) && (await throttler.canActivate(context));
    } catch (error) {
      return error;
    }
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

  it('lets requests through again once the window has passed', async () => {
    await setUp({ rateLimits: { perTrigger: { limit: 1, ttlMs: 100 }, perAccount: { limit: 100, ttlMs: 60_000 } } });
    const a = await addTrigger('acct');
    expect(await call(a)).toBe(true);
    expect(await call(a)).toBeInstanceOf(RateLimitedError);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await call(a)).toBe(true);
  });
});
