import type { Type } from '@nestjs/common';
import { InMemoryRateLimitStorage } from '../../src/rate-limits/in-memory-rate-limit.storage.js';
import type { Clock } from '../../src/time/clock.js';

export { ManualClock } from '../../src/time/manual-clock.js';

/**
 * The in-process rate-limit storage on `clock`, as a class the module can build (pass it as the `rateLimitStorage`
 * extra) or a spec can `new`.
 */
export function rateLimitStorageOn(clock: Clock): Type<InMemoryRateLimitStorage> {
  return class InMemoryRateLimitStorageOnClock extends InMemoryRateLimitStorage {
    protected override readonly clock = clock;
  };
}
