import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { BullMqBotRunner, RedisClusterBus, RedisRateLimitStorage } from '../../src/redis/index.js';
import { type WebhookTriggerModuleExtras, type WebhookTriggerModuleOptions, type WebhookTriggerRole } from '../../src/index.js';

/** Everything the sample app reads from the environment, validated, in one place. */
export interface SampleConfig {
  port: number;
  /** Absolute file path, or `:memory:` (unused when `databaseUrl` is set). */
  sqlitePath: string;
  /** DATABASE_URL: a PostgreSQL database instead of SQLite. */
  databaseUrl: string | undefined;
  /** REDIS_URL: BullMQ run queue, shared rate limits and cluster bus across processes. */
  redisUrl: string | undefined;
  /** WEBHOOK_ROLE: `all` (HTTP + runs), `api` (HTTP only) or `worker` (runs only, no HTTP server). */
  role: WebhookTriggerRole;
  /** REDIS_KEY_PREFIX: prefix of every Redis key and channel (library default when unset). */
  redisKeyPrefix: string | undefined;
  publicBaseUrl: string;
  adminToken: string;
  /** True when ADMIN_TOKEN was not set and a token was generated for this run. */
  adminTokenGenerated: boolean;
  syncTimeoutMs: number;
  triggerRps: number;
  accountRpm: number;
  /** Most bots running at once; further runs wait as `queued` (`maxConcurrentRuns`). */
  maxConcurrentRuns: number;
  /** Most runs of one account at once (`maxConcurrentRunsPerAccount`); unset: the library's default, no cap (fair share). */
  maxConcurrentRunsPerAccount: number | undefined;
  /** How long running bots may finish after SIGTERM before they are stored `failed` ("interrupted"). */
  shutdownGraceMs: number;
  /** Default time limit of a run (`botTimeoutMs`). */
  botTimeoutMs: number;
  /** How long a run's lease lasts; a run whose process died is recovered once it runs out (`runLeaseMs`). */
  runLeaseMs: number;
  /** Most starts of a `retryInterrupted` run that keeps losing its process (`maxRunAttempts`). */
  maxRunAttempts: number;
  /** WEBHOOK_CALLBACK_ALLOWED_HOSTS: hosts callbacks may reach even when private (`callbackAllowedHosts`). */
  callbackAllowedHosts: string[];
  /** WEBHOOK_CALLBACK_RETRY_MS: the callbacks' retry schedule in ms (`callbackRetryScheduleMs`); unset: Standard Webhooks'. */
  callbackRetryScheduleMs: number[] | undefined;
  /** WEBHOOK_CALLBACK_TIMEOUT_MS: longest a callback attempt may take (`callbackTimeoutMs`). */
  callbackTimeoutMs: number;
  keySecret: string;
  /** Where the key secret came from: the env var, a file beside the database, or memory only. */
  keySecretSource: { kind: 'env' } | { kind: 'file'; path: string; created: boolean } | { kind: 'memory' };
}

/** A bad environment value; the message names the variable. */
export class ConfigError extends Error {}

/** The sample app's folder (`sample-app/`), whether running from `dist/sample-app/src` or elsewhere. */
export const SAMPLE_APP_ROOT = resolve(__dirname, '..', '..', '..');
export const DEFAULT_SQLITE_PATH = join(SAMPLE_APP_ROOT, 'data', 'sample.sqlite');

const MAX_TIMER_MS = 2_147_483_647;
/** ADMIN_TOKEN's shortest length (the generated one has 32 characters). */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

/** Unset and empty both mean "use the default". */
function read(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/** A URL whose scheme is one of `protocols`; the message names the variable. */
function serviceUrl(env: NodeJS.ProcessEnv, name: string, protocols: string[], example: string): string | undefined {
  const raw = read(env, name);
  if (raw === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || !protocols.includes(url.protocol) || url.hostname === '') {
    // The value may hold a password: name the variable and the expected form, not the value.
    throw new ConfigError(`${name} must be a ${protocols.map((p) => p.slice(0, -1)).join(' or ')} URL such as ${example}`);
  }
  return raw;
}

function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** A comma list; empty items are refused (a stray comma is a typo, not "nothing"). */
function commaList(env: NodeJS.ProcessEnv, name: string): string[] | undefined {
  const raw = read(env, name);
  if (raw === undefined) return undefined;
  const items = raw.split(',').map((item) => item.trim());
  if (items.some((item) => item === ''))
    throw new ConfigError(`${name} must be a comma-separated list without empty items, got ${JSON.stringify(raw)}`);
  return items;
}

function callbackHosts(env: NodeJS.ProcessEnv): string[] {
  const hosts = commaList(env, 'WEBHOOK_CALLBACK_ALLOWED_HOSTS') ?? [];
  for (const host of hosts) {
    // Host names or IP addresses as written in a URL: no scheme, port, path or credentials.
    if (!/^(\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]+|[A-Za-z0-9.-]+)$/.test(host)) {
      throw new ConfigError(
        `WEBHOOK_CALLBACK_ALLOWED_HOSTS must list host names or IP addresses such as 127.0.0.1,localhost (no scheme or port), got ${JSON.stringify(host)}`,
      );
    }
  }
  return hosts;
}

function callbackRetries(env: NodeJS.ProcessEnv): number[] | undefined {
  const items = commaList(env, 'WEBHOOK_CALLBACK_RETRY_MS');
  if (items === undefined) return undefined;
  if (items.length > 100) throw new ConfigError('WEBHOOK_CALLBACK_RETRY_MS must list at most 100 delays');
  return items.map((item) => {
    const value = /^\d+$/.test(item) ? Number(item) : NaN;
    if (!Number.isSafeInteger(value) || value > MAX_TIMER_MS) {
      throw new ConfigError(
        `WEBHOOK_CALLBACK_RETRY_MS must be whole numbers of ms from 0 to ${MAX_TIMER_MS}, such as 0,5000,300000, got ${JSON.stringify(item)}`,
      );
    }
    return value;
  });
}

/**
 * Reads and validates the environment. Pure except for the key secret, which (when WEBHOOK_KEY_SECRET is
 * unset and the database is a file) is read from, or created in, `<dir of SQLITE_PATH>/key-secret`.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): SampleConfig {
  const port = wholeNumber(env, 'PORT', 3000, 1, 65535);

  const rawPath = read(env, 'SQLITE_PATH');
  const sqlitePath =
    rawPath === undefined ? DEFAULT_SQLITE_PATH : rawPath === ':memory:' ? ':memory:' : isAbsolute(rawPath) ? rawPath : resolve(rawPath);

  const databaseUrl = serviceUrl(env, 'DATABASE_URL', ['postgres:', 'postgresql:'], 'postgres://user:password@127.0.0.1:5432/webhooks');
  const redisUrl = serviceUrl(env, 'REDIS_URL', ['redis:', 'rediss:'], 'redis://127.0.0.1:6379');
  const redisKeyPrefix = read(env, 'REDIS_KEY_PREFIX');
  if (redisKeyPrefix !== undefined && /\s/.test(redisKeyPrefix)) throw new ConfigError('REDIS_KEY_PREFIX must not contain whitespace');
  const role = (read(env, 'WEBHOOK_ROLE') ?? 'all') as WebhookTriggerRole;
  if (!['all', 'api', 'worker'].includes(role))
    throw new ConfigError(`WEBHOOK_ROLE must be all, api or worker, got ${JSON.stringify(role)}`);
  if (role !== 'all' && (redisUrl === undefined || databaseUrl === undefined)) {
    // API nodes hand runs to workers through the Redis queue, and all of them must see the same rows.
    throw new ConfigError(
      `WEBHOOK_ROLE=${role} needs REDIS_URL (the run queue) and DATABASE_URL (one PostgreSQL database shared by every process)`,
    );
  }

  const publicBaseUrl = (read(env, 'PUBLIC_BASE_URL') ?? `http://localhost:${port}`).replace(/\/+$/, '');
  let url: URL | undefined;
  try {
    url = new URL(publicBaseUrl);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ConfigError(
      `PUBLIC_BASE_URL must be an absolute http(s) URL such as https://bots.example.com, got ${JSON.stringify(publicBaseUrl)}`,
    );
  }

  const givenToken = read(env, 'ADMIN_TOKEN');
  if (givenToken !== undefined && /\s/.test(givenToken)) throw new ConfigError('ADMIN_TOKEN must not contain whitespace');
  // It is also the key of the session cookies (HMAC): a short one would be guessable offline from a cookie.
  if (givenToken !== undefined && givenToken.length < MIN_ADMIN_TOKEN_LENGTH) {
    throw new ConfigError(`ADMIN_TOKEN must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters long`);
  }
  const adminToken = givenToken ?? randomBytes(24).toString('base64url');

  const syncTimeoutMs = wholeNumber(env, 'WEBHOOK_SYNC_TIMEOUT_MS', 300_000, 1, MAX_TIMER_MS);
  const triggerRps = wholeNumber(env, 'WEBHOOK_TRIGGER_RPS', 10, 1, 1_000_000);
  const accountRpm = wholeNumber(env, 'WEBHOOK_ACCOUNT_RPM', 100, 1, 1_000_000);
  const maxConcurrentRuns = wholeNumber(env, 'WEBHOOK_MAX_CONCURRENT_RUNS', 64, 1, 10_000);
  const maxConcurrentRunsPerAccount =
    read(env, 'WEBHOOK_MAX_CONCURRENT_RUNS_PER_ACCOUNT') === undefined
      ? undefined
      : wholeNumber(env, 'WEBHOOK_MAX_CONCURRENT_RUNS_PER_ACCOUNT', 1, 1, 10_000);
  const shutdownGraceMs = wholeNumber(env, 'WEBHOOK_SHUTDOWN_GRACE_MS', 10_000, 0, MAX_TIMER_MS);
  const botTimeoutMs = wholeNumber(env, 'WEBHOOK_BOT_TIMEOUT_MS', 900_000, 1, MAX_TIMER_MS);
  const runLeaseMs = wholeNumber(env, 'WEBHOOK_RUN_LEASE_MS', 15_000, 1, MAX_TIMER_MS);
  const maxRunAttempts = wholeNumber(env, 'WEBHOOK_MAX_RUN_ATTEMPTS', 3, 1, 1_000);
  const callbackAllowedHosts = callbackHosts(env);
  const callbackRetryScheduleMs = callbackRetries(env);
  const callbackTimeoutMs = wholeNumber(env, 'WEBHOOK_CALLBACK_TIMEOUT_MS', 15_000, 1, 600_000);

  const givenSecret = read(env, 'WEBHOOK_KEY_SECRET');
  if (givenSecret !== undefined && givenSecret.length < 16) {
    throw new ConfigError('WEBHOOK_KEY_SECRET must be at least 16 characters long');
  }
  const base = {
    port,
    sqlitePath,
    databaseUrl,
    redisUrl,
    redisKeyPrefix,
    role,
    publicBaseUrl,
    adminToken,
    adminTokenGenerated: givenToken === undefined,
    syncTimeoutMs,
    triggerRps,
    accountRpm,
    maxConcurrentRuns,
    maxConcurrentRunsPerAccount,
    shutdownGraceMs,
    botTimeoutMs,
    runLeaseMs,
    maxRunAttempts,
    callbackAllowedHosts,
    callbackRetryScheduleMs,
    callbackTimeoutMs,
  };
  if (givenSecret !== undefined) return { ...base, keySecret: givenSecret, keySecretSource: { kind: 'env' } };
  if (databaseUrl !== undefined) {
    // No file beside a server database, and every process on it must share one secret: ask for it.
    throw new ConfigError('WEBHOOK_KEY_SECRET must be set when DATABASE_URL is set (the same value on every process using that database)');
  }
  if (sqlitePath === ':memory:') return { ...base, keySecret: randomBytes(32).toString('base64url'), keySecretSource: { kind: 'memory' } };
  return { ...base, ...keySecretFile(sqlitePath) };
}

/** Creates the database folder if needed (called before the database is opened). */
export function ensureDatabaseDir(config: SampleConfig): void {
  if (config.databaseUrl !== undefined || config.sqlitePath === ':memory:') return;
  try {
    mkdirSync(dirname(config.sqlitePath), { recursive: true });
  } catch (e) {
    throw new ConfigError(`SQLITE_PATH: cannot create the folder ${dirname(config.sqlitePath)}: ${(e as Error).message}`);
  }
}

/** The generated key secret lives beside the database so keys stay viewable after a restart. */
function keySecretFile(sqlitePath: string): Pick<SampleConfig, 'keySecret' | 'keySecretSource'> {
  const path = join(dirname(sqlitePath), 'key-secret');
  try {
    mkdirSync(dirname(path), { recursive: true });
    if (!existsSync(path)) {
      try {
        writeFileSync(path, randomBytes(32).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' });
        return { keySecret: readSecret(path), keySecretSource: { kind: 'file', path, created: true } };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e; // another process was faster: read theirs
      }
    }
    return { keySecret: readSecret(path), keySecretSource: { kind: 'file', path, created: false } };
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(
      `SQLITE_PATH: cannot read or create the key secret file ${path} (or set WEBHOOK_KEY_SECRET): ${(e as Error).message}`,
    );
  }
}

function readSecret(path: string): string {
  const secret = readFileSync(path, 'utf8').trim();
  if (secret.length < 16)
    throw new ConfigError(`The key secret file ${path} holds fewer than 16 characters; delete it or set WEBHOOK_KEY_SECRET`);
  return secret;
}

/** With REDIS_URL: runs go through a BullMQ queue, and rate limits and "run finished" are shared through Redis by every process. */
export function webhookExtras(config: SampleConfig): WebhookTriggerModuleExtras {
  return config.redisUrl === undefined
    ? {}
    : { runner: BullMqBotRunner, rateLimitStorage: RedisRateLimitStorage, clusterBus: RedisClusterBus };
}

/** The library's options, derived from the sample config. */
export function webhookOptions(config: SampleConfig): WebhookTriggerModuleOptions {
  return {
    database:
      config.databaseUrl !== undefined
        ? { type: 'postgres', url: config.databaseUrl }
        : { type: 'better-sqlite3', database: config.sqlitePath },
    ...(config.redisUrl !== undefined && {
      redis: { url: config.redisUrl, ...(config.redisKeyPrefix !== undefined && { keyPrefix: config.redisKeyPrefix }) },
    }),
    publicBaseUrl: config.publicBaseUrl,
    syncTimeoutMs: config.syncTimeoutMs,
    rateLimits: {
      perTrigger: { limit: config.triggerRps, ttlMs: 1_000 },
      perAccount: { limit: config.accountRpm, ttlMs: 60_000 },
    },
    keySecret: config.keySecret,
    maxConcurrentRuns: config.maxConcurrentRuns,
    ...(config.maxConcurrentRunsPerAccount !== undefined && { maxConcurrentRunsPerAccount: config.maxConcurrentRunsPerAccount }),
    shutdownGraceMs: config.shutdownGraceMs,
    botTimeoutMs: config.botTimeoutMs,
    runLeaseMs: config.runLeaseMs,
    maxRunAttempts: config.maxRunAttempts,
    role: config.role,
    callbackAllowedHosts: config.callbackAllowedHosts,
    ...(config.callbackRetryScheduleMs !== undefined && { callbackRetryScheduleMs: config.callbackRetryScheduleMs }),
    callbackTimeoutMs: config.callbackTimeoutMs,
  };
}
