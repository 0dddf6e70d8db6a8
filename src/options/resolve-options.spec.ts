import type { WebhookTriggerModuleOptions } from './webhook-trigger-options.interface.js';
import type { ChosenExtras as WebhookTriggerModuleExtras } from './resolve-options.js';
import { DEFAULTS, REDIS_DEFAULTS } from './defaults.js';
import { resolveWebhookTriggerOptions } from './resolve-options.js';

describe('resolveWebhookTriggerOptions', () => {
  // The default values themselves are written once, in defaults.ts (their docs are checked against it by
  // defaults-docs.spec.ts); these specs say what a host notices about them.
  it('gives a host that sets nothing, {} or null the same complete options: every option has a value', () => {
    const resolved = resolveWebhookTriggerOptions();
    expect(resolveWebhookTriggerOptions({})).toEqual(resolved);
    expect(resolveWebhookTriggerOptions(null)).toEqual(resolved);
    expect(Object.keys(resolved).sort()).toEqual(Object.keys(DEFAULTS).sort());
    expect(resolved).toEqual(DEFAULTS);
  });

  it('changes only the option a host sets; a part of a nested option keeps the rest of its default', () => {
    const plain = resolveWebhookTriggerOptions();
    expect(resolveWebhookTriggerOptions({ maxConcurrentRuns: 5 })).toEqual({ ...plain, maxConcurrentRuns: 5 });
    expect(resolveWebhookTriggerOptions({ rateLimits: { perAccount: { limit: 5, ttlMs: 10_000 } } }).rateLimits).toEqual({
      perTrigger: plain.rateLimits.perTrigger,
      perAccount: { limit: 5, ttlMs: 10_000 },
    });
    expect(resolveWebhookTriggerOptions({ redis: { url: 'redis://127.0.0.1:6379' } }).redis).toEqual({
      url: 'redis://127.0.0.1:6379',
      keyPrefix: REDIS_DEFAULTS.keyPrefix,
    });
  });

  it('checks maxRunAttempts: a whole number from 1 to 1000', () => {
    expect(resolveWebhookTriggerOptions({ maxRunAttempts: 1 }).maxRunAttempts).toBe(1);
    expect(resolveWebhookTriggerOptions({ maxRunAttempts: 1000 }).maxRunAttempts).toBe(1000);
    for (const bad of [0, -1, 2.5, 1001, '3']) {
      expect(() => resolveWebhookTriggerOptions({ maxRunAttempts: bad as number })).toThrow(
        /maxRunAttempts.*expected a whole number from 1 to 1000/,
      );
    }
  });

  it('checks the callback options', () => {
    expect(
      resolveWebhookTriggerOptions({ callbackAllowedHosts: [' 127.0.0.1', 'localhost'], callbackRetryScheduleMs: [0, 100] }),
    ).toMatchObject({ callbackAllowedHosts: ['127.0.0.1', 'localhost'], callbackRetryScheduleMs: [0, 100] });
    expect(() => resolveWebhookTriggerOptions({ callbackAllowedHosts: 'localhost' as unknown as string[] })).toThrow(
      /callbackAllowedHosts/,
    );
    expect(() => resolveWebhookTriggerOptions({ callbackAllowedHosts: ['http://localhost:3000'] })).toThrow(/callbackAllowedHosts\[0\]/);
    expect(() => resolveWebhookTriggerOptions({ callbackRetryScheduleMs: [] })).toThrow(/callbackRetryScheduleMs/);
    expect(() => resolveWebhookTriggerOptions({ callbackRetryScheduleMs: [0, -1] })).toThrow(/callbackRetryScheduleMs\[1\]/);
    expect(() => resolveWebhookTriggerOptions({ callbackDisableAfterFailures: 0 })).toThrow(/callbackDisableAfterFailures/);
    expect(() => resolveWebhookTriggerOptions({ callbackTimeoutMs: 1.5 })).toThrow(/callbackTimeoutMs/);
  });

  it('checks the metricsAccountLabels extra (a boolean)', () => {
    expect(() => resolveWebhookTriggerOptions({}, { metricsAccountLabels: 'yes' as unknown as boolean })).toThrow(/"metricsAccountLabels"/);
    expect(() => resolveWebhookTriggerOptions({}, { metricsAccountLabels: true })).not.toThrow();
  });

  it('keeps given values, fills the rest, and normalises the URL', () => {
    const resolved = resolveWebhookTriggerOptions({
      syncTimeoutMs: 1_000,
      rateLimits: { perAccount: { limit: 5, ttlMs: 10_000 } },
      keySecret: 'a-secret-of-16-chars',
      database: { type: 'postgres', url: 'postgres://u@127.0.0.1:5432/db' },
      publicBaseUrl: 'https://api.example.com/base//',
      migrationsRun: false,
    });
    expect(resolved).toMatchObject({
      syncTimeoutMs: 1_000,
      rateLimits: { perTrigger: DEFAULTS.rateLimits.perTrigger, perAccount: { limit: 5, ttlMs: 10_000 } },
      keySecret: 'a-secret-of-16-chars',
      database: { type: 'postgres', url: 'postgres://u@127.0.0.1:5432/db' },
      publicBaseUrl: 'https://api.example.com/base',
      migrationsRun: false,
      maxBodyBytes: DEFAULTS.maxBodyBytes,
    });
  });

  it('sets no per-account cap unless one is given (an account alone may use every slot), and keeps accounts as given', () => {
    expect(resolveWebhookTriggerOptions({ maxConcurrentRuns: 5 }).maxConcurrentRunsPerAccount).toBeUndefined();
    expect(resolveWebhookTriggerOptions({ maxConcurrentRuns: 5, maxConcurrentRunsPerAccount: 2 }).maxConcurrentRunsPerAccount).toBe(2);
    expect(resolveWebhookTriggerOptions({ maxConcurrentRuns: 5, maxConcurrentRunsPerAccount: 5 }).maxConcurrentRunsPerAccount).toBe(5);
    expect(resolveWebhookTriggerOptions({ accounts: { default: { credits: 100 } } }).accounts).toEqual({ default: { credits: 100 } });
  });

  it('keeps maxQueuedRuns as given, 0 (no bound) included', () => {
    expect(resolveWebhookTriggerOptions({ maxQueuedRuns: 1 }).maxQueuedRuns).toBe(1);
    expect(resolveWebhookTriggerOptions({ maxQueuedRuns: 0 }).maxQueuedRuns).toBe(0);
    expect(resolveWebhookTriggerOptions({ maxQueuedRuns: 100_000_000 }).maxQueuedRuns).toBe(100_000_000);
  });

  it('hands out copies, so one app changing its options cannot change the defaults of another', () => {
    const before = structuredClone(resolveWebhookTriggerOptions());
    const a = resolveWebhookTriggerOptions();
    a.rateLimits.perTrigger.limit += 1;
    (a.database as { database: string }).database = 'changed';
    a.accounts.changed = { credits: 1 };
    expect(resolveWebhookTriggerOptions()).toEqual(before);
    expect(DEFAULTS).toEqual(before);
  });

  const bad: Array<[string, WebhookTriggerModuleOptions]> = [
    ['syncTimeoutMs', { syncTimeoutMs: 0 }],
    ['syncTimeoutMs', { syncTimeoutMs: -5 }],
    ['syncTimeoutMs', { syncTimeoutMs: 1.5 }],
    ['syncTimeoutMs', { syncTimeoutMs: '300' as unknown as number }],
    ['syncTimeoutMs', { syncTimeoutMs: 2 ** 31 }], // past what setTimeout can wait
    ['syncTimeoutMs', { syncTimeoutMs: Number.NaN }],
    ['rateLimits.perTrigger', { rateLimits: { perTrigger: null as unknown as { limit: number; ttlMs: number } } }],
    ['rateLimits.perTrigger.limit', { rateLimits: { perTrigger: { limit: 0, ttlMs: 1000 } } }],
    ['rateLimits.perTrigger.ttlMs', { rateLimits: { perTrigger: { limit: 1, ttlMs: 0 } } }],
    ['rateLimits.perAccount.limit', { rateLimits: { perAccount: { limit: 2.5, ttlMs: 1000 } } }],
    ['rateLimits.perAccount.ttlMs', { rateLimits: { perAccount: { limit: 1 } as { limit: number; ttlMs: number } } }],
    ['maxBodyBytes', { maxBodyBytes: 0 }],
    ['maxBodyBytes', { maxBodyBytes: Infinity }],
    ['keySecret', { keySecret: 'short' }],
    ['keySecret', { keySecret: 1234567890123456 as unknown as string }],
    ['database.type', { database: { type: 'mysql' } as unknown as WebhookTriggerModuleOptions['database'] }],
    ['database.database', { database: { type: 'better-sqlite3', database: '' } }],
    ['database.database', { database: { type: 'better-sqlite3' } as unknown as WebhookTriggerModuleOptions['database'] }],
    ['database.url', { database: { type: 'postgres', url: ' ' } }],
    ['publicBaseUrl', { publicBaseUrl: 'not a url' }],
    ['publicBaseUrl', { publicBaseUrl: '' }],
    ['defaultAccountId', { defaultAccountId: '' }],
    ['maxConcurrentRuns', { maxConcurrentRuns: 0 }],
    ['maxConcurrentRuns', { maxConcurrentRuns: 10_001 }],
    ['maxConcurrentRunsPerAccount', { maxConcurrentRunsPerAccount: 0 }],
    ['bodyTimeoutMs', { bodyTimeoutMs: 0 }],
    ['maxJsonDepth', { maxJsonDepth: 0 }],
    ['maxOutputBytes', { maxOutputBytes: -1 }],
    ['maxEventStreams', { maxEventStreams: 0 }],
    ['maxEventStreamsPerTrigger', { maxEventStreamsPerTrigger: 0 }],
    ['maxEventStreamsPerAccount', { maxEventStreamsPerAccount: 1.5 }],
    ['maxQueuedRuns', { maxQueuedRuns: -1 }],
    ['maxQueuedRuns', { maxQueuedRuns: 2.5 }],
    ['maxQueuedRuns', { maxQueuedRuns: Infinity }],
    ['maxQueuedRuns', { maxQueuedRuns: 100_000_001 }],
    ['maxQueuedRuns', { maxQueuedRuns: '100' as unknown as number }],
    ['accounts', { accounts: [] as unknown as Record<string, { credits: number }> }],
    ['accounts', { accounts: { 'a\u0000b': { credits: 1 } } }],
    ['accounts.acct.credits', { accounts: { acct: { credits: -1 } } }],
    ['idempotencyTtlMs', { idempotencyTtlMs: -1 }],
    ['triggerCacheTtlMs', { triggerCacheTtlMs: -1 }],
    ['triggerCacheTtlMs', { triggerCacheTtlMs: 3_600_001 }],
    ['triggerCacheTtlMs', { triggerCacheTtlMs: 0.5 }],
    ['migrationsRun', { migrationsRun: 'false' as unknown as boolean }],
    ['applyHostThrottler', { applyHostThrottler: 'yes' as unknown as boolean }],
    ['rateLimits', { rateLimits: 'strict' as unknown as WebhookTriggerModuleOptions['rateLimits'] }],
    ['role', { role: 'workers' as unknown as WebhookTriggerModuleOptions['role'] }],
  ];

  it.each(bad)('rejects a bad %s with a message naming it', (field, options) => {
    expect(() => resolveWebhookTriggerOptions(options)).toThrow(`WebhookTriggerModule: invalid option "${field}"`);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['syncTimeoutMS', { syncTimeoutMS: 1000 }, 'unknown option "syncTimeoutMS"; did you mean "syncTimeoutMs"?'],
    ['maxBodySize', { maxBodySize: 10 }, 'unknown option "maxBodySize"; did you mean "maxBodyBytes"?'],
    ['idempotencyHeader (removed)', { idempotencyHeader: 'x-id' }, 'unknown option "idempotencyHeader"'],
    [
      'rateLimits.perTriger',
      { rateLimits: { perTriger: { limit: 1, ttlMs: 1 } } },
      'unknown option "rateLimits.perTriger"; did you mean "perTrigger"?',
    ],
    ['redis.prefix', { redis: { url: 'redis://x', prefix: 'a:' } }, 'unknown option "redis.prefix"'],
    ['database.file', { database: { type: 'better-sqlite3', file: 'x.sqlite' } }, 'unknown option "database.file"'],
    ['something unrelated', { colour: 'blue' }, 'unknown option "colour"'],
  ])('rejects an unknown key (%s), suggesting the nearest known one', (_case, options, message) => {
    expect(() => resolveWebhookTriggerOptions(options as WebhookTriggerModuleOptions)).toThrow(`WebhookTriggerModule: ${message}`);
  });

  it('names no suggestion when nothing is close', () => {
    expect(() => resolveWebhookTriggerOptions({ colour: 'blue' } as WebhookTriggerModuleOptions)).toThrow(/unknown option "colour"$/);
  });

  describe('checks the extras against the options', () => {
    class RedisPart {
      static readonly requiresRedis = true;
    }
    class QueueRunner {
      static readonly durable = true;
      static readonly requiresRedis = true;
    }
    class Store {}
    const redis = { url: 'redis://127.0.0.1:6379' };
    const ok = (options: WebhookTriggerModuleOptions, extras: WebhookTriggerModuleExtras) => () =>
      resolveWebhookTriggerOptions(options, extras);

    it.each<[string, WebhookTriggerModuleOptions, WebhookTriggerModuleExtras, string]>([
      [
        'database with dataSourceName',
        { database: { type: 'postgres', url: 'postgres://x' } },
        { dataSourceName: 'default' },
        'invalid option "database"',
      ],
      ['migrationsRun with dataSourceName', { migrationsRun: true }, { dataSourceName: 'default' }, 'invalid option "migrationsRun"'],
      ['an empty dataSourceName', {}, { dataSourceName: '' }, 'invalid option "dataSourceName"'],
      [
        'a Redis part without redis',
        {},
        { rateLimitStorage: RedisPart },
        'invalid option "redis": RedisPart (the "rateLimitStorage" extra) needs',
      ],
      ["role 'api' with the in-process runner", { role: 'api' }, {}, `invalid option "role": 'api' means this process never runs bots`],
      ['storage with dataSourceName', {}, { storage: Store, dataSourceName: 'default' }, 'invalid option "dataSourceName": applies to'],
      [
        'storage with database',
        { database: { type: 'better-sqlite3', database: 'x.db' } },
        { storage: Store },
        'invalid option "database"',
      ],
      ['storage with migrationsRun', { migrationsRun: false }, { storage: Store }, 'invalid option "migrationsRun"'],
      ['a storage that is a string', {}, { storage: 'memory' }, 'invalid option "storage": expected a WebhookStorage class or instance'],
      ['an extra that is not a class', {}, { runner: 'bullmq' }, 'invalid option "runner": expected a class'],
      ['a clock without now()', {}, { clock: { now: 0 } }, 'invalid option "clock": expected a Clock: an object with now()'],
    ])('refuses %s', (_case, options, extras, message) => {
      expect(ok(options, extras)).toThrow(`WebhookTriggerModule: ${message}`);
    });

    it.each<[string, WebhookTriggerModuleOptions, WebhookTriggerModuleExtras]>([
      ['dataSourceName alone', {}, { dataSourceName: 'default' }],
      ['a Redis part with redis', { redis }, { clusterBus: RedisPart }],
      ["role 'api' with a durable runner", { role: 'api', redis }, { runner: QueueRunner }],
      ['a storage class', {}, { storage: Store }],
      ['a storage instance', {}, { storage: new Store() }],
    ])('accepts %s', (_case, options, extras) => {
      expect(ok(options, extras)).not.toThrow();
    });
  });
});
