import type { ServiceCheck } from '../health/service-check.js';

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

/** One sliding window: at most `limit` hits on `key` within the last `ttl` ms. */
export interface RateLimitWindow {
  key: string;
  /** The window, in ms. */
  ttl: number;
  limit: number;
}

/** What `admit` is asked: a failed-key limit to respect (never counted in) and the named limits to count in. */
export interface AdmissionRequest<Name extends string = string> {
  failures?: RateLimitWindow;
  /** Distinct keys; the first one that refuses names the refusal. */
  limits: ReadonlyArray<RateLimitWindow & { name: Name }>;
}

/** What `admit` answers. */
export interface Admission<Name extends string = string> {
  /** `'failures'`, the name of the limit that refused, or null when admitted (and counted in every limit). */
  refusedBy: 'failures' | Name | null;
  /** Seconds to wait (the Retry-After value, at least 1) when refused; else 0. */
  retryAfterSeconds: number;
}

/**
 * Where the webhook rate limits (per trigger, per account, failed keys per client IP) are counted.
 * Every implementation follows the same exact sliding window: a hit is accepted when fewer than `limit`
 * accepted hits fall in the last `ttl` ms; refused hits are not counted, and Retry-After is the time until
 * the oldest counted hit leaves the window. The default, `InMemoryRateLimitStorage`, counts in this
 * process; `RedisRateLimitStorage` counts for all processes sharing one Redis. Choose one with the
 * `rateLimitStorage` extra of `WebhookTriggerModule.forRoot()`.
 */
export abstract class RateLimitStorage {
  /** Records one hit on `key` unless it is over the limit (@nestjs/throttler's `ThrottlerStorage`). */
  abstract increment(key: string, ttl: number, limit: number, blockDuration?: number, throttlerName?: string): Promise<RateLimitRecord>;

  /**
   * The failed-key limit, as ONE atomic step: when `key` already holds `limit` failures within the
   * last `ttl` ms, answers the seconds to wait (≥ 1) and records nothing; otherwise records one failure
   * if `failed` is true and answers 0. The caller judges the key first (in constant time) and lets this
   * decide, so N concurrent wrong keys from one client get exactly `limit` answers that depend on the key.
   */
  abstract checkFailures(key: string, ttl: number, limit: number, failed: boolean): Promise<number>;

  /**
   * A request with a right key, as ONE atomic step: refused by `failures` when that window is full (the
   * client has too many failed keys), then by the first of `limits` whose window is full; in both cases
   * nothing is recorded anywhere. Otherwise one hit is recorded in EVERY limit. So a refusal by one limit
   * never counts in another, and N concurrent requests get exactly as many admissions as the tightest
   * window has room for.
   *
   * This default is built on `checkFailures` and `increment`, for storages written before `admit`: one
   * call per window, and not atomic across them (a limit that refuses leaves the hits already recorded in
   * the limits before it). The package's storages override it with one atomic step (one round trip in Redis).
   */
  /**
   * Remembers `key` for `ttlMs`, as ONE atomic step: true the first time, false while it is remembered (on
   * every node sharing the storage). Signed requests use it to refuse a `webhook-id` seen before.
   *
   * This default is a window of one hit (`increment` with limit 1), so a storage written before this method
   * already answers it as atomically as its `increment`; the package's storages override it.
   */
  async rememberOnce(key: string, ttlMs: number): Promise<boolean> {
    return !(await this.increment(key, ttlMs, 1)).isBlocked;
  }

  /**
   * Forgets `key` remembered by `rememberOnce` (on every node sharing the storage), so its next `rememberOnce`
   * answers true: a signed request whose run was not accepted (402, 503) gives its `webhook-id` back, and the
   * sender's retry with the same id is taken. Never throws.
   *
   * This default, for storages written before it, forgets nothing (a window of `increment` cannot be taken
   * back): the key stays remembered until its ttl ends. The package's storages override it.
   */
  async forget(_key: string): Promise<void> {
    // nothing to take back
  }

  async admit<Name extends string>(request: AdmissionRequest<Name>): Promise<Admission<Name>> {
    const { failures, limits } = request;
    if (failures) {
      const wait = await this.checkFailures(failures.key, failures.ttl, failures.limit, false);
      if (wait > 0) return { refusedBy: 'failures', retryAfterSeconds: wait };
    }
    for (const { key, ttl, limit, name } of limits) {
      const record = await this.increment(key, ttl, limit, 0, name);
      if (record.isBlocked) return { refusedBy: name, retryAfterSeconds: Math.max(1, record.timeToBlockExpire) };
    }
    return { refusedBy: null, retryAfterSeconds: 0 };
  }

  /** The outside services this storage relies on (e.g. Redis), for the health probes. None by default. */
  serviceChecks(): readonly ServiceCheck[] {
    return [];
  }
}
