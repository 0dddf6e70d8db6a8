import type { Type } from '@nestjs/common';
import { InMemoryRateLimitStorage } from '../../src/rate-limits/in-memory-rate-limit.storage.js';
import { Clock } from '../../src/time/clock.js';

/** A clock that moves only when the test moves it: windows and timeouts pass at once, not in real time. */
export class ManualClock extends Clock {
  constructor(private current = 0) {
    super();
  }

  now(): number {
    return this.current;
  }

  /** Moves the time forward by `ms`. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`A clock moves forward only, not by ${ms} ms`);
    this.current += ms;
  }

  /** Sets the time (ms since the epoch, or since the test's zero). */
  set(ms: number): void {
    this.current = ms;
  }
}

/**
 * The in-process rate-limit storage on `clock`, as a class the module can build (pass it as the `rateLimitStorage`
 * extra) or a spec can `new`.
 */
export function rateLimitStorageOn(clock: Clock): Type<InMemoryRateLimitStorage> {
  return class InMemoryRateLimitStorageOnClock extends InMemoryRateLimitStorage {
    protected override readonly clock = clock;
  };
}
