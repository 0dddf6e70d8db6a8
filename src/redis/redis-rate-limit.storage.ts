import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis as RedisClient } from 'ioredis';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { CANNOT_CONNECT } from '../errors/webhook-trigger.messages.js';
import { createRedisClient, redactRedisUrl } from './ioredis.js';
import {
  type Admission,
  type AdmissionRequest,
  RateLimitStorage,
  type RateLimitRecord,
  type RateLimitWindow,
} from '../rate-limits/rate-limit.storage.js';
import { InMemoryRateLimitStorage } from '../rate-limits/in-memory-rate-limit.storage.js';
import { REDIS_NOW_MS } from './redis-time.lua.js';
import { Batcher } from '../batching/batcher.js';
import type { ServiceCheck } from '../health/service-check.js';

/** A hit that Redis does not answer within this is counted in process instead. */
const COMMAND_TIMEOUT_MS = 1000;

/**
 * One hit, atomically (the same exact sliding window as InMemoryRateLimitStorage): drop hits that
 * have left the window; accept when fewer than `limit` remain, recording this one; else refuse without
 * recording it and answer the ms until the hit that must leave first does.
 * KEYS[1] the sorted set (score = time of an accepted hit); ARGV ttl ms, limit, a unique member.
 * Returns { accepted 1|0, accepted hits in the window, ms to wait }.
 */
const INCREMENT = `${REDIS_NOW_MS}
local key = KEYS[1]
local ttl = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - ttl))
local count = redis.call('ZCARD', key)
if count < limit then
  redis.call('ZADD', key, string.format('%d', now), ARGV[3])
  redis.call('PEXPIRE', key, ttl)
  return { 1, count + 1, 0 }
end
local first = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
return { 0, count, tonumber(first[2]) + ttl - now }
`;

/**
 * The failed-key limit in one atomic step (see `RateLimitStorage.checkFailures`): when the window already
 * holds `limit` failures, answer the ms until the oldest that matters leaves and record nothing;
 * otherwise record this failure when ARGV[4] is 1 and answer 0.
 * KEYS[1] the sorted set; ARGV ttl ms, limit, a unique member, failed 1|0.
 */
const CHECK_FAILURES = `${REDIS_NOW_MS}
local key = KEYS[1]
local ttl = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - ttl))
local count = redis.call('ZCARD', key)
if count >= limit then
  local first = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
  return tonumber(first[2]) + ttl - now
end
if ARGV[4] == '1' then
  redis.call('ZADD', key, string.format('%d', now), ARGV[3])
  redis.call('PEXPIRE', key, ttl)
end
return 0
`;

/**
 * The requests of one batch, each in one atomic step (see `RateLimitStorage.admit`), in order: for each
 * request, its first `checkOnly` keys are only checked (the failed-key window), the others are checked and
 * then, when none refused, counted. Every window of a request is checked before any is recorded, so a
 * refusal by one never counts in another; a later request of the batch sees the hits of the earlier ones.
 * KEYS every request's sorted sets in turn; ARGV the number of requests, then for each: its number of keys,
 * how many leading keys are check-only, a unique member, then ttl ms and limit for each of its keys.
 * Returns two numbers per request: 0, 0 when admitted, else the index of its refusing key and the ms to wait.
 */
const ADMIT_ALL = `${REDIS_NOW_MS}
local answers = {}
local k = 0
local a = 2
for r = 1, tonumber(ARGV[1]) do
  local n = tonumber(ARGV[a])
  local checkOnly = tonumber(ARGV[a + 1])
  local member = ARGV[a + 2]
  a = a + 3
  local refusing, wait = 0, 0
  for i = 1, n do
    local key = KEYS[k + i]
    local ttl = tonumber(ARGV[a + 2 * i - 2])
    local limit = tonumber(ARGV[a + 2 * i - 1])
    redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - ttl))
    local count = redis.call('ZCARD', key)
    if count >= limit then
      local first = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
      refusing, wait = i, tonumber(first[2]) + ttl - now
      break
    end
  end
  if refusing == 0 then
    for i = checkOnly + 1, n do
      redis.call('ZADD', KEYS[k + i], string.format('%d', now), member)
      redis.call('PEXPIRE', KEYS[k + i], ARGV[a + 2 * i - 2])
    end
  end
  answers[2 * r - 1] = refusing
  answers[2 * r] = wait
  k = k + n
  a = a + 2 * n
end
return answers
`;

/** Most admissions sent in one script call (a few hundred windows: well under a millisecond of Redis). */
const ADMIT_BATCH = 200;

/** One request's windows (the failed-key one first when it has one), as the batch script takes them. */
interface PendingAdmission {
  windows: RateLimitWindow[];
  checkOnly: 0 | 1;
}

type ScriptedRedis = RedisClient & {
  webhookRateIncrement(key: string, ttl: number, limit: number, member: string): Promise<[number, number, number]>;
  webhookCheckFailures(key: string, ttl: number, limit: number, member: string, failed: '1' | '0'): Promise<number>;
  webhookAdmitAll(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Promise<number[]>;
};

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * Rate limits counted in Redis, so that they hold across all API processes together (10/s per trigger
 * means 10/s in total, however many nodes serve it). A Lua script on a sorted set per key, timed by the
 * Redis server's clock: `admit` checks and counts all of a request's windows at once, and the admissions
 * that arrive while one batch is in flight (or in the same event-loop turn) go to Redis together, as one
 * script call, so under load a node sends a fraction of a Redis command per request. Needs the `redis` option:
 *
 * ```ts
 * WebhookTriggerModule.forRoot({ redis: { url: process.env.REDIS_URL }, rateLimitStorage: RedisRateLimitStorage })
 * ```
 */
@Injectable()
export class RedisRateLimitStorage extends RateLimitStorage implements OnModuleInit, OnApplicationShutdown {
  /** Read by the option checks: choosing this class requires the `redis` option. */
  static readonly requiresRedis = true;
  private readonly logger = new Logger(LOG_CONTEXT);
  private readonly redis: ScriptedRedis;
  private readonly keyPrefix: string;
  private readonly url: string;
  /** Members must be unique across nodes: hits in the same ms from two nodes are two hits. */
  private readonly node = randomBytes(6).toString('base64url');
  private sequence = 0;
  /** Admissions waiting for the next script call (one in flight per node). */
  private readonly admissions = new Batcher<PendingAdmission, [number, number]>((batch) => this.admitAll(batch), ADMIT_BATCH);
  /** Errors before the first connection are reported by onModuleInit, not logged. */
  private connected = false;
  /**
   * Where hits are counted while Redis does not answer: the same limits, per node, so a brief outage
   * neither fails triggers nor lifts the limits (with N nodes, at most N × limit pass meanwhile).
   */
  private readonly local = new InMemoryRateLimitStorage();
  private degraded = false;

  constructor(@Inject(RESOLVED_OPTIONS) options: ResolvedWebhookTriggerOptions) {
    super();
    const redis = options.redis!; // checked at bootstrap (requiresRedis)
    this.keyPrefix = `${redis.keyPrefix}rate:`;
    this.url = redis.url;
    this.redis = createRedisClient('RedisRateLimitStorage', this.url, {
      lazyConnect: true,
      connectionName: 'webhook-triggers:rate',
      // While Redis is unreachable a hit fails at once (and is counted in this process) instead of
      // holding the request until Redis is back.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: COMMAND_TIMEOUT_MS,
      // The requests of one event-loop turn share one socket write (one pipeline): under load, one write
      // carries tens of admissions instead of one each.
      enableAutoPipelining: true,
    }) as ScriptedRedis;
    this.redis.on('error', (e: Error) => {
      if (this.connected) this.logger.warn(`Redis (rate limits): ${e.message}`);
    });
    this.redis.on('ready', () => {
      if (this.degraded) this.logger.log('Redis (rate limits) is back: limits are shared by all nodes again');
      this.degraded = false;
    });
    this.redis.defineCommand('webhookRateIncrement', { numberOfKeys: 1, lua: INCREMENT });
    this.redis.defineCommand('webhookCheckFailures', { numberOfKeys: 1, lua: CHECK_FAILURES });
    // The number of keys varies with the batch: given first on each call.
    this.redis.defineCommand('webhookAdmitAll', { lua: ADMIT_ALL });
  }

  /** The limits' Redis, pinged on their connection. */
  override serviceChecks(): readonly ServiceCheck[] {
    return [{ service: 'redis', part: 'RedisRateLimitStorage', ping: () => this.redis.ping() }];
  }

  /** Connects at bootstrap, so an unreachable Redis stops the app instead of failing its first requests. */
  async onModuleInit(): Promise<void> {
    try {
      await this.redis.connect();
      this.connected = true;
    } catch (e) {
      this.redis.disconnect();
      throw new WebhookConfigurationError(CANNOT_CONNECT('RedisRateLimitStorage', redactRedisUrl(this.url), (e as Error).message));
    }
  }

  async increment(key: string, ttl: number, limit: number, blockDuration?: number, throttlerName?: string): Promise<RateLimitRecord> {
    let result: [number, number, number];
    try {
      result = await this.redis.webhookRateIncrement(this.keyPrefix + key, ttl, limit, this.nextMember());
    } catch (error) {
      this.degrade(error);
      return this.local.increment(key, ttl, limit, blockDuration, throttlerName);
    }
    const [accepted, hits, waitMs] = result;
    if (accepted === 1) return { totalHits: hits, timeToExpire: Math.ceil(ttl / 1000), isBlocked: false, timeToBlockExpire: 0 };
    return { totalHits: limit + 1, timeToExpire: Math.ceil(waitMs / 1000), isBlocked: true, timeToBlockExpire: seconds(waitMs) };
  }

  async checkFailures(key: string, ttl: number, limit: number, failed: boolean): Promise<number> {
    let waitMs: number;
    try {
      waitMs = Number(await this.redis.webhookCheckFailures(this.keyPrefix + key, ttl, limit, this.nextMember(), failed ? '1' : '0'));
    } catch (error) {
      this.degrade(error);
      return this.local.checkFailures(key, ttl, limit, failed);
    }
    return waitMs > 0 ? seconds(waitMs) : 0;
  }

  override async admit<Name extends string>(request: AdmissionRequest<Name>): Promise<Admission<Name>> {
    const windows: RateLimitWindow[] = request.failures ? [request.failures, ...request.limits] : [...request.limits];
    let answer: [number, number];
    try {
      answer = await this.admissions.push({ windows, checkOnly: request.failures ? 1 : 0 });
    } catch (error) {
      this.degrade(error);
      return this.local.admit(request);
    }
    const [refusing, waitMs] = answer;
    if (refusing === 0) return { refusedBy: null, retryAfterSeconds: 0 };
    const refusedBy = request.failures && refusing === 1 ? 'failures' : request.limits[refusing - 1 - (request.failures ? 1 : 0)].name;
    return { refusedBy, retryAfterSeconds: seconds(waitMs) };
  }

  /**
   * See `RateLimitStorage.rememberOnce`: `SET NX PX`, one atomic command for all nodes. While Redis does not
   * answer, this process remembers (as the limits are counted: a replay on another node is then not seen).
   */
  override async rememberOnce(key: string, ttlMs: number): Promise<boolean> {
    try {
      return (await this.redis.set(`${this.keyPrefix}once:${key}`, '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK';
    } catch (error) {
      this.degrade(error);
      return this.local.rememberOnce(key, ttlMs);
    }
  }

  /** See `RateLimitStorage.forget`: `DEL` for all nodes, and this process's own memory of the key (kept while Redis was down). */
  override async forget(key: string): Promise<void> {
    await this.local.forget(key);
    try {
      await this.redis.del(`${this.keyPrefix}once:${key}`);
    } catch (error) {
      this.degrade(error);
    }
  }

  /** One script call for a batch of admissions; answers [refusing key index or 0, ms to wait] per admission. */
  private async admitAll(batch: PendingAdmission[]): Promise<Array<[number, number]>> {
    const keys: string[] = [];
    const args: (string | number)[] = [batch.length];
    for (const { windows, checkOnly } of batch) {
      args.push(windows.length, checkOnly, this.nextMember());
      for (const { key, ttl, limit } of windows) {
        keys.push(this.keyPrefix + key);
        args.push(ttl, limit);
      }
    }
    const flat = await this.redis.webhookAdmitAll(keys.length, ...keys, ...args);
    return batch.map((_, i) => [Number(flat[2 * i]), Number(flat[2 * i + 1])]);
  }

  private nextMember(): string {
    return `${this.node}:${(this.sequence = (this.sequence + 1) % Number.MAX_SAFE_INTEGER)}`;
  }

  private degrade(error: unknown): void {
    if (!this.degraded) {
      this.logger.warn(`Redis (rate limits) did not answer (${(error as Error).message}); counting in this process until it is back`);
    }
    this.degraded = true;
  }

  /**
   * After every onModuleDestroy: during the shutdown grace the HTTP server still answers and the guards
   * still count, so the connection must outlive them (a closed one would turn a 503 into a 500).
   */
  async onApplicationShutdown(): Promise<void> {
    this.local.onModuleDestroy();
    if (this.redis.status === 'end') return;
    if (this.redis.status !== 'ready') return this.redis.disconnect();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
