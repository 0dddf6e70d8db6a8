import { DEFAULT_CALLBACK_RETRY_SCHEDULE_MS } from '../callbacks/retry-schedule.js';
import type { ResolvedWebhookTriggerOptions } from './webhook-trigger-options.interface.js';

/** Longest delay a Node timer accepts; the ceiling of every option in milliseconds that sets a timer. */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The one place defaults live, in the shape of the resolved options (internal: hosts read the resolved
 * options through `@InjectWebhookTriggerOptions()`). Frozen, and copied by `resolveWebhookTriggerOptions`.
 */
export const DEFAULTS = deepFreeze({
  syncTimeoutMs: 300_000,
  rateLimits: { perTrigger: { limit: 10, ttlMs: 1_000 }, perAccount: { limit: 100, ttlMs: 60_000 } },
  maxBodyBytes: 1024 * 1024,
  bodyTimeoutMs: 10_000,
  maxJsonDepth: 64,
  maxOutputBytes: 1024 * 1024,
  maxEventStreams: 1000,
  maxEventStreamsPerTrigger: 100,
  maxEventStreamsPerAccount: 250,
  maxSyncWaiters: 10_000,
  maxSyncWaitersPerTrigger: 1_000,
  maxSyncWaitersPerAccount: 2_500,
  keySecret: undefined,
  database: { type: 'better-sqlite3', database: 'webhook-triggers.sqlite' },
  migrationsRun: true,
  defaultAccountId: 'default',
  publicBaseUrl: undefined,
  maxConcurrentRuns: 64,
  maxConcurrentRunsPerAccount: undefined,
  maxQueuedRuns: 10_000,
  accounts: {},
  idempotencyTtlMs: 24 * 60 * 60 * 1000,
  triggerCacheTtlMs: 30_000,
  botTimeoutMs: 15 * 60 * 1000,
  shutdownGraceMs: 10_000,
  runLeaseMs: 15_000,
  maxRunAttempts: 3,
  historyRetentionDays: 30,
  keyRotationGraceMs: 24 * 60 * 60 * 1000,
  auditRetentionDays: 365,
  failedKeyLimit: { limit: 30, ttlMs: 60_000 },
  redis: undefined,
  role: 'all',
  callbackAllowedHosts: [],
  callbackRetryScheduleMs: [...DEFAULT_CALLBACK_RETRY_SCHEDULE_MS],
  callbackDisableAfterFailures: 5,
  callbackTimeoutMs: 15_000,
  applyHostThrottler: false,
} satisfies ResolvedWebhookTriggerOptions);

/** Defaults of the `redis` option's fields, once it is given. */
export const REDIS_DEFAULTS = deepFreeze({ keyPrefix: 'webhook-triggers:' });

/** Defaults of `@WebhookBot()` fields that do not come from the module's options. */
export const BOT_DEFAULTS = deepFreeze({ credits: 1, retryInterrupted: false });

function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value)) if (typeof child === 'object' && child !== null) deepFreeze(child as object);
  return Object.freeze(value);
}
