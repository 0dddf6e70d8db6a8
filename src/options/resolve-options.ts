import type {
  ResolvedWebhookTriggerOptions,
  WebhookRateLimit,
  WebhookTriggerModuleOptions,
  WebhookTriggerRole,
} from './webhook-trigger-options.interface.js';
import { INVALID_OPTION } from '../errors/webhook-trigger.messages.js';

/** The one place defaults live. */
export const DEFAULT_OPTIONS = {
  syncTimeoutMs: 300_000,
  perTrigger: { limit: 10, ttlMs: 1_000 },
  perAccount: { limit: 100, ttlMs: 60_000 },
  maxBodyBytes: 1024 * 1024,
  database: { type: 'better-sqlite3', database: 'webhook-triggers.sqlite' },
  migrationsRun: true,
  defaultAccountId: 'default',
  publicBaseUrl: 'http://localhost:3000',
  maxConcurrentRuns: 16,
  idempotencyHeader: 'idempotency-key',
  idempotencyTtlMs: 24 * 60 * 60 * 1000,
  botTimeoutMs: 15 * 60 * 1000,
  shutdownGraceMs: 10_000,
  runLeaseMs: 15_000,
  role: 'all' as WebhookTriggerRole,
  historyRetentionDays: 30,
  failedKeyLimit: { limit: 30, ttlMs: 60_000 },
} as const;

function positiveInt(field: string, value: unknown, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new Error(INVALID_OPTION(field, `expected a whole number from 1 to ${max}, got ${JSON.stringify(value)}`));
  }
  return value;
}

/** Longest delay a Node timer accepts. */
const MAX_TIMER_MS = 2_147_483_647;

function wholeNumber(field: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw new Error(INVALID_OPTION(field, `expected a whole number from 0 to ${max}, got ${JSON.stringify(value)}`));
  }
  return value;
}

function nonEmptyString(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new Error(INVALID_OPTION(field, `expected a non-empty string, got ${JSON.stringify(value)}`));
  }
  return value;
}

function boolean(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new Error(INVALID_OPTION(field, `expected true or false, got ${JSON.stringify(value)}`));
  return value;
}

function rateLimit(field: string, value: WebhookRateLimit | undefined, fallback: WebhookRateLimit): WebhookRateLimit {
  if (value === undefined) return { ...fallback };
  if (typeof value !== 'object' || value === null) {
    throw new Error(INVALID_OPTION(field, 'expected { limit, ttlMs }'));
  }
  return { limit: positiveInt(`${field}.limit`, value.limit), ttlMs: positiveInt(`${field}.ttlMs`, value.ttlMs) };
}

const ROLES: readonly WebhookTriggerRole[] = ['all', 'api', 'worker'];
function role(value: unknown): WebhookTriggerRole {
  if (!ROLES.includes(value as WebhookTriggerRole)) throw new Error(INVALID_OPTION('role', `expected one of ${ROLES.join(', ')}, got ${JSON.stringify(value)}`));
  return value as WebhookTriggerRole;
}

function redisOptions(value: unknown): { url: string; keyPrefix: string } {
  const r = (value ?? {}) as { url?: unknown; keyPrefix?: unknown };
  const url = nonEmptyString('redis.url', r.url);
  if (!/^rediss?:\/\//.test(url)) throw new Error(INVALID_OPTION('redis.url', `expected redis:// or rediss://, got ${JSON.stringify(url)}`));
  return { url, keyPrefix: r.keyPrefix === undefined ? 'webhook-triggers:' : nonEmptyString('redis.keyPrefix', r.keyPrefix) };
}

/** Applies defaults and validates; a bad value stops bootstrap with a message naming the field. */
export function resolveWebhookTriggerOptions(raw: WebhookTriggerModuleOptions = {}): ResolvedWebhookTriggerOptions {
  const o = raw ?? {};
  if (o.keySecret !== undefined && (typeof o.keySecret !== 'string' || o.keySecret.length < 16)) {
    throw new Error(INVALID_OPTION('keySecret', 'expected a string of at least 16 characters'));
  }
  if (o.rateLimits !== undefined && (typeof o.rateLimits !== 'object' || o.rateLimits === null)) {
    throw new Error(INVALID_OPTION('rateLimits', 'expected { perTrigger?, perAccount? }'));
  }
  const database = o.database ?? DEFAULT_OPTIONS.database;
  if (database.type === 'better-sqlite3') nonEmptyString('database.database', database.database);
  else if (database.type === 'postgres') nonEmptyString('database.url', database.url);
  else throw new Error(INVALID_OPTION('database.type', `expected "better-sqlite3" or "postgres", got ${JSON.stringify((database as { type: unknown }).type)}`));

  const publicBaseUrl = nonEmptyString('publicBaseUrl', o.publicBaseUrl ?? DEFAULT_OPTIONS.publicBaseUrl);
  try {
    new URL(publicBaseUrl);
  } catch {
    throw new Error(INVALID_OPTION('publicBaseUrl', `not an absolute URL: ${JSON.stringify(publicBaseUrl)}`));
  }
  return {
    syncTimeoutMs: positiveInt('syncTimeoutMs', o.syncTimeoutMs ?? DEFAULT_OPTIONS.syncTimeoutMs, MAX_TIMER_MS),
    rateLimits: {
      perTrigger: rateLimit('rateLimits.perTrigger', o.rateLimits?.perTrigger, DEFAULT_OPTIONS.perTrigger),
      perAccount: rateLimit('rateLimits.perAccount', o.rateLimits?.perAccount, DEFAULT_OPTIONS.perAccount),
    },
    maxBodyBytes: positiveInt('maxBodyBytes', o.maxBodyBytes ?? DEFAULT_OPTIONS.maxBodyBytes),
    keySecret: o.keySecret,
    database: { ...database },
    migrationsRun: boolean('migrationsRun', o.migrationsRun ?? DEFAULT_OPTIONS.migrationsRun),
    defaultAccountId: nonEmptyString('defaultAccountId', o.defaultAccountId ?? DEFAULT_OPTIONS.defaultAccountId),
    publicBaseUrl: publicBaseUrl.replace(/\/+$/, ''),
    maxConcurrentRuns: positiveInt('maxConcurrentRuns', o.maxConcurrentRuns ?? DEFAULT_OPTIONS.maxConcurrentRuns, 10_000),
    idempotencyHeader: nonEmptyString('idempotencyHeader', o.idempotencyHeader ?? DEFAULT_OPTIONS.idempotencyHeader).toLowerCase(),
    idempotencyTtlMs: positiveInt('idempotencyTtlMs', o.idempotencyTtlMs ?? DEFAULT_OPTIONS.idempotencyTtlMs),
    botTimeoutMs: positiveInt('botTimeoutMs', o.botTimeoutMs ?? DEFAULT_OPTIONS.botTimeoutMs, MAX_TIMER_MS),
    shutdownGraceMs: wholeNumber('shutdownGraceMs', o.shutdownGraceMs ?? DEFAULT_OPTIONS.shutdownGraceMs, MAX_TIMER_MS),
    runLeaseMs: positiveInt('runLeaseMs', o.runLeaseMs ?? DEFAULT_OPTIONS.runLeaseMs, MAX_TIMER_MS),
    historyRetentionDays: wholeNumber('historyRetentionDays', o.historyRetentionDays ?? DEFAULT_OPTIONS.historyRetentionDays, 100_000),
    failedKeyLimit: rateLimit('failedKeyLimit', o.failedKeyLimit, DEFAULT_OPTIONS.failedKeyLimit),
    redis: o.redis === undefined ? undefined : redisOptions(o.redis),
    role: role(o.role ?? DEFAULT_OPTIONS.role),
  };
}
