import type { ThrottlerStorage } from '@nestjs/throttler';

/** What `increment` answers (@nestjs/throttler's `ThrottlerStorageRecord`). */
export interface RateLimitRecord {
  /** Accepted hits in the window, counting this one; `limit + 1` when refused. */
  totalHits: number;
  /** Seconds until the window frees up. */
  timeToExpire: number;
  isBlocked: boolean;
  /** Seconds to wait before retrying (the Retry-After value, at least 1) when blocked; else 0. */
  timeToBlockExpire: number;
}

/**
 * Where the webhook rate limits (per trigger, per account, failed keys per client IP) are counted.
 * Every implementation follows the same exact sliding window: a hit is accepted when fewer than `limit`
 * accepted hits fall in the last `ttl` ms; refused hits are not counted, and Retry-After is the time until
 * the oldest counted hit leaves the window. The default, `InMemoryRateLimitStorage`, counts in this
 * process; `RedisRateLimitStorage` counts for all processes sharing one Redis. Choose one with the
 * `rateLimitStorage` extra of `WebhookTriggerModule.forRoot()`.
 */
export abstract class RateLimitStorage implements ThrottlerStorage {
  /** Records one hit on `key` unless it is over the limit (@nestjs/throttler's `ThrottlerStorage`). */
  abstract increment(key: string, ttl: number, limit: number, blockDuration?: number, throttlerName?: string): Promise<RateLimitRecord>;

  /**
   * The failed-key limit, as ONE atomic step: when `key` already holds `limit` failures within the
   * last `ttl` ms, answers the seconds to wait (≥ 1) and records nothing; otherwise records one failure
   * if `failed` is true and answers 0. The caller judges the key first (in constant time) and lets this
   * decide, so N concurrent wrong keys from one client get exactly `limit` answers that depend on the key.
   */
  abstract checkFailures(key: string, ttl: number, limit: number, failed: boolean): Promise<number>;
}
