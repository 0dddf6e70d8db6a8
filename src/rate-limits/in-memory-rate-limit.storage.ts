import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { Clock, SYSTEM_CLOCK } from '../time/clock.js';
import { type Admission, type AdmissionRequest, RateLimitStorage, type RateLimitRecord } from './rate-limit.storage.js';

/**
 * The times of a key's last `limit` accepted hits, in a ring. The ring grows with the hits actually
 * seen (up to `limit`), so a generous limit costs memory only when it is used.
 */
interface Window {
  hits: number[];
  limit: number;
  next: number;
  ttl: number;
}

/**
 * Exact sliding-window limits in O(1) per request: a request is accepted when fewer than `limit`
 * accepted requests fall in the last `ttl` ms, i.e. when the oldest of the last `limit` hits has left
 * the window. Unlike @nestjs/throttler's default storage, the cost does not grow with rate × window,
 * and unlike a fixed window it never lets 2 × limit through across a window edge.
 */
@Injectable()
export class InMemoryRateLimitStorage extends RateLimitStorage implements OnModuleDestroy {
  private readonly windows = new Map<string, Window>();
  /** Where the windows read the time: the module's `Clock` (the `clock` extra), or a subclass's own. */
  protected readonly clock: Clock;
  private readonly sweeper: NodeJS.Timeout;

  constructor(@Inject(Clock) clock: Clock = SYSTEM_CLOCK) {
    super();
    this.clock = clock;
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  async increment(key: string, ttl: number, limit: number, _blockDuration?: number, _throttlerName?: string): Promise<RateLimitRecord> {
    const retryMs = this.hit(key, ttl, limit, true);
    if (retryMs > 0) {
      return {
        totalHits: limit + 1,
        timeToExpire: Math.ceil(retryMs / 1000),
        isBlocked: true,
        timeToBlockExpire: Math.max(1, Math.ceil(retryMs / 1000)),
      };
    }
    return { totalHits: this.windows.get(key)!.hits.length, timeToExpire: Math.ceil(ttl / 1000), isBlocked: false, timeToBlockExpire: 0 };
  }

  /** See `RateLimitStorage.checkFailures`: synchronous inside, so atomic in this process. */
  async checkFailures(key: string, ttl: number, limit: number, failed: boolean): Promise<number> {
    const retryMs = this.hit(key, ttl, limit, failed);
    return retryMs > 0 ? Math.max(1, Math.ceil(retryMs / 1000)) : 0;
  }

  /** See `RateLimitStorage.admit`: every window is checked, then every limit counted, with no await between. */
  override async admit<Name extends string>({ failures, limits }: AdmissionRequest<Name>): Promise<Admission<Name>> {
    if (failures) {
      const retryMs = this.hit(failures.key, failures.ttl, failures.limit, false);
      if (retryMs > 0) return { refusedBy: 'failures', retryAfterSeconds: Math.max(1, Math.ceil(retryMs / 1000)) };
    }
    for (const { key, ttl, limit, name } of limits) {
      const retryMs = this.hit(key, ttl, limit, false);
      if (retryMs > 0) return { refusedBy: name, retryAfterSeconds: Math.max(1, Math.ceil(retryMs / 1000)) };
    }
    for (const { key, ttl, limit } of limits) this.hit(key, ttl, limit, true);
    return { refusedBy: null, retryAfterSeconds: 0 };
  }

  /** See `RateLimitStorage.rememberOnce`: a window of one hit on this process's clock. */
  override async rememberOnce(key: string, ttlMs: number): Promise<boolean> {
    return this.hit(key, ttlMs, 1, true) === 0;
  }

  /** See `RateLimitStorage.forget`: the key's window goes. */
  override async forget(key: string): Promise<void> {
    this.windows.delete(key);
  }

  /**
   * The ms until `key` accepts a hit again when its window is full (nothing recorded then); otherwise 0,
   * after recording the hit when `record` is true.
   */
  private hit(key: string, ttl: number, limit: number, record: boolean): number {
    const now = this.clock.now();
    let w = this.windows.get(key);
    if (!w || w.limit !== limit || w.ttl !== ttl) {
      if (!record) return 0;
      w = { hits: [], limit, next: 0, ttl };
      this.windows.set(key, w);
    }
    const full = w.hits.length === limit;
    // When the ring is full, `next` points at the oldest accepted hit.
    if (full && now - w.hits[w.next] < ttl) return w.hits[w.next] + ttl - now;
    if (!record) return 0;
    if (full) {
      w.hits[w.next] = now;
      w.next = (w.next + 1) % limit;
    } else {
      w.hits.push(now);
    }
    return 0;
  }

  /** Drops keys whose newest hit has left its window. */
  private sweep(now = this.clock.now()): void {
    for (const [key, w] of this.windows) {
      const newest = w.hits.length === w.limit ? w.hits[(w.next + w.limit - 1) % w.limit] : w.hits[w.hits.length - 1];
      if (now - newest >= w.ttl) this.windows.delete(key);
    }
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }
}
