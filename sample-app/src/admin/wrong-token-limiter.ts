import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { ADMIN_AUTH_OPTIONS, type AdminAuthOptions } from './admin-auth.options.js';

/** Wrong admin tokens a client (IP) may send in `WRONG_TOKEN_WINDOW_MS` before it has to wait. */
export const WRONG_TOKEN_LIMIT = 10;
export const WRONG_TOKEN_WINDOW_MS = 60_000;

/**
 * Counts wrong admin tokens (sign-in form and Bearer header) per client, in this process: an exact sliding
 * window over the last `WRONG_TOKEN_LIMIT` failures. The library's `InMemoryRateLimitStorage.checkFailures`
 * does the same for trigger keys, but it is not part of the library's public API, which is all this
 * sample host uses. Several sample-app nodes count separately (each allows the limit).
 */
@Injectable()
export class WrongTokenLimiter implements OnModuleDestroy {
  /** Per client: times of its failures still in the window, oldest first (at most `limit`). */
  private readonly failures = new Map<string, number[]>();
  private readonly sweeper: NodeJS.Timeout;

  private readonly limit: number;
  private readonly windowMs: number;

  constructor(@Inject(ADMIN_AUTH_OPTIONS) options: AdminAuthOptions) {
    this.limit = options.wrongTokens?.limit ?? WRONG_TOKEN_LIMIT;
    this.windowMs = options.wrongTokens?.windowMs ?? WRONG_TOKEN_WINDOW_MS;
    this.sweeper = setInterval(() => this.sweep(), this.windowMs);
    this.sweeper.unref();
  }

  /**
   * One atomic step after the token was judged: when `client` already has `limit` failures in the window,
   * answers the seconds to wait (≥ 1) and records nothing, whether this token was right or not (so the
   * answer then says nothing about the token); otherwise records a failure when `wrong` and answers 0.
   */
  check(client: string, wrong: boolean, now = Date.now()): number {
    const times = (this.failures.get(client) ?? []).filter((t) => now - t < this.windowMs);
    if (times.length >= this.limit) {
      this.failures.set(client, times);
      return Math.max(1, Math.ceil((times[0] + this.windowMs - now) / 1000));
    }
    if (wrong) times.push(now);
    if (times.length > 0) this.failures.set(client, times);
    else this.failures.delete(client);
    return 0;
  }

  /** Drops clients whose newest failure has left the window. */
  private sweep(now = Date.now()): void {
    for (const [client, times] of this.failures) if (now - times[times.length - 1] >= this.windowMs) this.failures.delete(client);
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }
}
