import {
  ACCOUNT_ID_INVALID,
  ACCOUNTS_INVALID,
  ALLOWED_HOST_INVALID,
  ALLOWED_HOSTS_NOT_LIST,
  API_ROLE_RUNS_NOTHING,
  DATA_SOURCE_AND_DATABASE,
  DATABASE_TYPE_INVALID,
  EXPECTED_BOOLEAN,
  EXPECTED_NON_EMPTY_STRING,
  EXPECTED_ONE_OF,
  EXPECTED_SHAPE,
  EXPECTED_WHOLE_NUMBER,
  EXTRA_NEEDS_REDIS,
  EXTRA_NOT_CLASS,
  INVALID_OPTION,
  KEY_SECRET_TOO_SHORT,
  MIGRATIONS_RUN_WITH_DATA_SOURCE,
  NOT_ABSOLUTE_URL,
  REDIS_URL_INVALID,
  RETRY_SCHEDULE_INVALID,
  STORAGE_NOT_CLASS,
  CLOCK_WITHOUT_NOW,
  TRANSPORT_NOT_CLASS,
  STORAGE_REPLACES_SQL,
  UNKNOWN_OPTION,
} from '../errors/webhook-trigger.messages.js';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { ACCOUNT_ID_PATTERN } from '../keys/ids.js';
import { DEFAULTS, MAX_TIMER_MS, REDIS_DEFAULTS } from './defaults.js';
import type {
  ResolvedWebhookTriggerOptions,
  WebhookRateLimit,
  WebhookTriggerModuleOptions,
  WebhookTriggerRole,
} from './webhook-trigger-options.interface.js';

const invalid = (field: string, problem: string) => new WebhookConfigurationError(INVALID_OPTION(field, problem));
const shown = (value: unknown) => JSON.stringify(value) ?? String(value);

function positiveInt(field: string, value: unknown, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw invalid(field, EXPECTED_WHOLE_NUMBER(1, max, shown(value)));
  }
  return value;
}

function wholeNumber(field: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw invalid(field, EXPECTED_WHOLE_NUMBER(0, max, shown(value)));
  }
  return value;
}

function nonEmptyString(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw invalid(field, EXPECTED_NON_EMPTY_STRING(shown(value)));
  return value;
}

function boolean(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw invalid(field, EXPECTED_BOOLEAN(shown(value)));
  return value;
}

/** An object whose keys are all among `known`; an unknown one stops startup with the nearest known name. */
function object(field: string, value: unknown, known: readonly string[], expected: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(field, EXPECTED_SHAPE(expected));
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      const path = field === '' ? key : `${field}.${key}`;
      throw new WebhookConfigurationError(UNKNOWN_OPTION(path, nearest(key, known)));
    }
  }
  return value as Record<string, unknown>;
}

/** The known name closest to `name` (edit distance ≤ 1/3 of its length, case-insensitive), if any. */
function nearest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.ceil(name.length / 3)) + 1;
  for (const candidate of known) {
    const d = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}

function rateLimit(field: string, value: unknown, fallback: WebhookRateLimit): WebhookRateLimit {
  if (value === undefined) return { ...fallback };
  const r = object(field, value, ['limit', 'ttlMs'], '{ limit, ttlMs }');
  return { limit: positiveInt(`${field}.limit`, r.limit), ttlMs: positiveInt(`${field}.ttlMs`, r.ttlMs) };
}

const ROLES: readonly WebhookTriggerRole[] = ['all', 'api', 'worker'];
function role(value: unknown): WebhookTriggerRole {
  if (!ROLES.includes(value as WebhookTriggerRole)) throw invalid('role', EXPECTED_ONE_OF(ROLES, shown(value)));
  return value as WebhookTriggerRole;
}

function database(value: unknown): ResolvedWebhookTriggerOptions['database'] {
  if (value === undefined) return { ...DEFAULTS.database };
  const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  if (type === 'better-sqlite3') {
    const d = object('database', value, ['type', 'database'], '{ type, database }');
    return { type, database: nonEmptyString('database.database', d.database) };
  }
  if (type === 'postgres') {
    const d = object('database', value, ['type', 'url'], '{ type, url }');
    return { type, url: nonEmptyString('database.url', d.url) };
  }
  throw invalid('database.type', DATABASE_TYPE_INVALID(shown(type)));
}

function redis(value: unknown): ResolvedWebhookTriggerOptions['redis'] {
  if (value === undefined) return undefined;
  const r = object('redis', value, ['url', 'keyPrefix'], '{ url, keyPrefix? }');
  const url = nonEmptyString('redis.url', r.url);
  if (!/^rediss?:\/\//.test(url)) throw invalid('redis.url', REDIS_URL_INVALID(shown(url)));
  return { url, keyPrefix: r.keyPrefix === undefined ? REDIS_DEFAULTS.keyPrefix : nonEmptyString('redis.keyPrefix', r.keyPrefix) };
}

function accounts(value: unknown): Record<string, { credits: number }> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('accounts', ACCOUNTS_INVALID);
  const result: Record<string, { credits: number }> = {};
  for (const [id, account] of Object.entries(value)) {
    if (!ACCOUNT_ID_PATTERN.test(id)) throw invalid('accounts', ACCOUNT_ID_INVALID(shown(id)));
    const a = object(`accounts.${id}`, account, ['credits'], '{ credits }');
    result[id] = { credits: wholeNumber(`accounts.${id}.credits`, a.credits, Number.MAX_SAFE_INTEGER) };
  }
  return result;
}

function absoluteUrl(field: string, value: unknown): string {
  const url = nonEmptyString(field, value);
  try {
    new URL(url);
  } catch {
    throw invalid(field, NOT_ABSOLUTE_URL(shown(url)));
  }
  return url.replace(/\/+$/, '');
}

function hostList(value: unknown): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalid('callbackAllowedHosts', ALLOWED_HOSTS_NOT_LIST(shown(value)));
  return value.map((host: unknown, i) => {
    const name = nonEmptyString(`callbackAllowedHosts[${i}]`, host).trim();
    if (/[\s/@?#]/.test(name)) throw invalid(`callbackAllowedHosts[${i}]`, ALLOWED_HOST_INVALID(shown(host)));
    return name;
  });
}

function retrySchedule(value: unknown): readonly number[] {
  if (value === undefined) return [...DEFAULTS.callbackRetryScheduleMs];
  if (!Array.isArray(value) || value.length === 0 || value.length > 100) {
    throw invalid('callbackRetryScheduleMs', RETRY_SCHEDULE_INVALID(shown(value)));
  }
  return value.map((ms: unknown, i) => wholeNumber(`callbackRetryScheduleMs[${i}]`, ms, MAX_TIMER_MS));
}

const OPTION_NAMES = Object.keys(DEFAULTS);
/** Names of the extras (wiring) of `forRoot()`/`forRootAsync()`, listed so Nest strips them from the options. */
export const WEBHOOK_TRIGGER_EXTRA_NAMES = [
  'isGlobal',
  'metricsAccountLabels',
  'dataSourceName',
  'storage',
  'runner',
  'clusterBus',
  'rateLimitStorage',
  'clock',
  'callbackTransport',
] as const;
export type WebhookTriggerExtraName = (typeof WEBHOOK_TRIGGER_EXTRA_NAMES)[number];
/** Extras that are replacement parts. */
const PART_EXTRAS = ['storage', 'runner', 'clusterBus', 'rateLimitStorage', 'callbackTransport'] as const;
/** Extras that may also be an instance (a test's in-memory storage, the testing kit's capturing transport). */
const INSTANCE_EXTRAS: ReadonlySet<string> = new Set(['storage', 'callbackTransport']);
/**
 * The extras as the checks see them: their names and values, not the contracts' types (options/ names no
 * other part; the typed `WebhookTriggerModuleExtras` lives with the module's wiring).
 */
export type ChosenExtras = { isGlobal?: boolean; metricsAccountLabels?: boolean; dataSourceName?: string; clock?: unknown } & {
  [K in (typeof PART_EXTRAS)[number]]?: unknown;
};

/** What a replacement class may declare about itself (static), read by the checks below. */
interface PartClass {
  /** The part needs the `redis` option (the Redis parts). */
  requiresRedis?: boolean;
  /** Runs outlive this process and execute elsewhere (a queue), so an `'api'` process may use it. */
  durable?: boolean;
}

/** Checks between options and extras: the wiring must be able to work before the app serves. */
function checkWiring(options: ResolvedWebhookTriggerOptions, raw: Record<string, unknown>, extras: ChosenExtras): void {
  for (const name of PART_EXTRAS) {
    const part = extras[name];
    if (part === undefined) continue;
    // A storage or a callback transport may also be an instance; every other part is bound with useClass.
    if (typeof part !== 'function' && !(INSTANCE_EXTRAS.has(name) && typeof part === 'object' && part !== null)) {
      throw invalid(name, name === 'storage' ? STORAGE_NOT_CLASS : name === 'callbackTransport' ? TRANSPORT_NOT_CLASS : EXTRA_NOT_CLASS);
    }
    const declared = (typeof part === 'function' ? part : part.constructor) as PartClass & { name: string };
    if (declared.requiresRedis && !options.redis) throw invalid('redis', EXTRA_NEEDS_REDIS(declared.name, name));
  }
  if (extras.metricsAccountLabels !== undefined) boolean('metricsAccountLabels', extras.metricsAccountLabels);
  const clock: unknown = extras.clock;
  if (
    clock !== undefined &&
    (typeof clock !== 'object' ||
      clock === null ||
      !('now' in clock) ||
      typeof clock.now !== 'function' ||
      !('setTimer' in clock) ||
      typeof clock.setTimer !== 'function')
  ) {
    throw invalid('clock', CLOCK_WITHOUT_NOW);
  }
  if (extras.storage !== undefined) {
    for (const name of ['dataSourceName', 'database', 'migrationsRun'] as const) {
      if ((name === 'dataSourceName' ? extras.dataSourceName : raw[name]) !== undefined) throw invalid(name, STORAGE_REPLACES_SQL);
    }
  }
  if (extras.dataSourceName !== undefined) {
    nonEmptyString('dataSourceName', extras.dataSourceName);
    if (raw.database !== undefined) throw invalid('database', DATA_SOURCE_AND_DATABASE);
    if (raw.migrationsRun !== undefined) {
      throw invalid('migrationsRun', MIGRATIONS_RUN_WITH_DATA_SOURCE);
    }
  }
  if (options.role === 'api' && !(extras.runner as PartClass | undefined)?.durable) {
    throw invalid('role', API_ROLE_RUNS_NOTHING);
  }
}

/**
 * Applies defaults and checks every option, and the extras against them; a bad value stops bootstrap
 * with a message naming the field. The one place options are validated.
 */
export function resolveWebhookTriggerOptions(
  raw: WebhookTriggerModuleOptions | null = {},
  extras: ChosenExtras = {},
): ResolvedWebhookTriggerOptions {
  const o = object('', raw ?? {}, OPTION_NAMES, 'an options object');
  if (o.keySecret !== undefined && (typeof o.keySecret !== 'string' || o.keySecret.length < 16)) {
    throw invalid('keySecret', KEY_SECRET_TOO_SHORT);
  }
  const limits =
    o.rateLimits === undefined ? {} : object('rateLimits', o.rateLimits, ['perTrigger', 'perAccount'], '{ perTrigger?, perAccount? }');
  const maxConcurrentRuns = positiveInt('maxConcurrentRuns', o.maxConcurrentRuns ?? DEFAULTS.maxConcurrentRuns, 10_000);
  const resolved: ResolvedWebhookTriggerOptions = {
    syncTimeoutMs: positiveInt('syncTimeoutMs', o.syncTimeoutMs ?? DEFAULTS.syncTimeoutMs, MAX_TIMER_MS),
    rateLimits: {
      perTrigger: rateLimit('rateLimits.perTrigger', limits.perTrigger, DEFAULTS.rateLimits.perTrigger),
      perAccount: rateLimit('rateLimits.perAccount', limits.perAccount, DEFAULTS.rateLimits.perAccount),
    },
    maxBodyBytes: positiveInt('maxBodyBytes', o.maxBodyBytes ?? DEFAULTS.maxBodyBytes),
    bodyTimeoutMs: positiveInt('bodyTimeoutMs', o.bodyTimeoutMs ?? DEFAULTS.bodyTimeoutMs, MAX_TIMER_MS),
    maxJsonDepth: positiveInt('maxJsonDepth', o.maxJsonDepth ?? DEFAULTS.maxJsonDepth, 10_000),
    maxOutputBytes: positiveInt('maxOutputBytes', o.maxOutputBytes ?? DEFAULTS.maxOutputBytes),
    maxEventStreams: positiveInt('maxEventStreams', o.maxEventStreams ?? DEFAULTS.maxEventStreams, 1_000_000),
    maxEventStreamsPerTrigger: positiveInt(
      'maxEventStreamsPerTrigger',
      o.maxEventStreamsPerTrigger ?? DEFAULTS.maxEventStreamsPerTrigger,
      1_000_000,
    ),
    maxEventStreamsPerAccount: positiveInt(
      'maxEventStreamsPerAccount',
      o.maxEventStreamsPerAccount ?? DEFAULTS.maxEventStreamsPerAccount,
      1_000_000,
    ),
    maxSyncWaiters: positiveInt('maxSyncWaiters', o.maxSyncWaiters ?? DEFAULTS.maxSyncWaiters, 1_000_000),
    maxSyncWaitersPerTrigger: positiveInt(
      'maxSyncWaitersPerTrigger',
      o.maxSyncWaitersPerTrigger ?? DEFAULTS.maxSyncWaitersPerTrigger,
      1_000_000,
    ),
    maxSyncWaitersPerAccount: positiveInt(
      'maxSyncWaitersPerAccount',
      o.maxSyncWaitersPerAccount ?? DEFAULTS.maxSyncWaitersPerAccount,
      1_000_000,
    ),
    keySecret: o.keySecret,
    database: database(o.database),
    migrationsRun: boolean('migrationsRun', o.migrationsRun ?? DEFAULTS.migrationsRun),
    defaultAccountId: nonEmptyString('defaultAccountId', o.defaultAccountId ?? DEFAULTS.defaultAccountId),
    publicBaseUrl: o.publicBaseUrl === undefined ? undefined : absoluteUrl('publicBaseUrl', o.publicBaseUrl),
    maxConcurrentRuns,
    maxConcurrentRunsPerAccount:
      o.maxConcurrentRunsPerAccount === undefined
        ? undefined
        : positiveInt('maxConcurrentRunsPerAccount', o.maxConcurrentRunsPerAccount, 10_000),
    maxQueuedRuns: wholeNumber('maxQueuedRuns', o.maxQueuedRuns ?? DEFAULTS.maxQueuedRuns, 100_000_000),
    accounts: accounts(o.accounts),
    idempotencyTtlMs: positiveInt('idempotencyTtlMs', o.idempotencyTtlMs ?? DEFAULTS.idempotencyTtlMs),
    // At most an hour: it bounds how long a rotated key may still work on a node that missed the news.
    triggerCacheTtlMs: wholeNumber('triggerCacheTtlMs', o.triggerCacheTtlMs ?? DEFAULTS.triggerCacheTtlMs, 3_600_000),
    botTimeoutMs: positiveInt('botTimeoutMs', o.botTimeoutMs ?? DEFAULTS.botTimeoutMs, MAX_TIMER_MS),
    shutdownGraceMs: wholeNumber('shutdownGraceMs', o.shutdownGraceMs ?? DEFAULTS.shutdownGraceMs, MAX_TIMER_MS),
    runLeaseMs: positiveInt('runLeaseMs', o.runLeaseMs ?? DEFAULTS.runLeaseMs, MAX_TIMER_MS),
    maxRunAttempts: positiveInt('maxRunAttempts', o.maxRunAttempts ?? DEFAULTS.maxRunAttempts, 1_000),
    historyRetentionDays: wholeNumber('historyRetentionDays', o.historyRetentionDays ?? DEFAULTS.historyRetentionDays, 100_000),
    keyRotationGraceMs: wholeNumber('keyRotationGraceMs', o.keyRotationGraceMs ?? DEFAULTS.keyRotationGraceMs, 365 * 24 * 60 * 60 * 1000),
    auditRetentionDays: wholeNumber('auditRetentionDays', o.auditRetentionDays ?? DEFAULTS.auditRetentionDays, 100_000),
    failedKeyLimit: rateLimit('failedKeyLimit', o.failedKeyLimit, DEFAULTS.failedKeyLimit),
    redis: redis(o.redis),
    role: role(o.role ?? DEFAULTS.role),
    callbackAllowedHosts: hostList(o.callbackAllowedHosts),
    callbackRetryScheduleMs: retrySchedule(o.callbackRetryScheduleMs),
    callbackDisableAfterFailures: positiveInt(
      'callbackDisableAfterFailures',
      o.callbackDisableAfterFailures ?? DEFAULTS.callbackDisableAfterFailures,
      1_000_000,
    ),
    callbackTimeoutMs: positiveInt('callbackTimeoutMs', o.callbackTimeoutMs ?? DEFAULTS.callbackTimeoutMs, 600_000),
    applyHostThrottler: boolean('applyHostThrottler', o.applyHostThrottler ?? DEFAULTS.applyHostThrottler),
  };
  checkWiring(resolved, o, extras ?? {});
  return resolved;
}
