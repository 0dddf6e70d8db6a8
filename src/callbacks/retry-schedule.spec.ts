import { DEFAULT_CALLBACK_RETRY_SCHEDULE_MS, nextAttemptDelay } from './retry-schedule.js';

const mid = () => 0.5; // no jitter
const low = () => 0; // -20%
const high = () => 0.999999; // just under +20%

describe('nextAttemptDelay', () => {
  it('follows the Standard Webhooks schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(DEFAULT_CALLBACK_RETRY_SCHEDULE_MS).toEqual([0, 5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6]);
    const delays = [1, 2, 3, 4, 5, 6, 7].map((n) => nextAttemptDelay(n, undefined, undefined, mid));
    expect(delays).toEqual([5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6]);
  });

  it('gives up (null) once every attempt of the schedule was made', () => {
    expect(nextAttemptDelay(8, undefined, undefined, mid)).toBeNull();
    expect(nextAttemptDelay(2, [0, 100], undefined, mid)).toBeNull();
    expect(nextAttemptDelay(8, undefined, 60)).toBeNull();
  });

  it('adds up to ±20% jitter, and spreads the delays', () => {
    expect(nextAttemptDelay(1, undefined, undefined, low)).toBe(4000);
    expect(nextAttemptDelay(1, undefined, undefined, high)).toBe(6000);
    const seen = new Set(Array.from({ length: 50 }, () => nextAttemptDelay(2)));
    expect(seen.size).toBeGreaterThan(10);
    for (const delay of seen) {
      expect(delay).toBeGreaterThanOrEqual(240_000);
      expect(delay).toBeLessThanOrEqual(360_000);
    }
  });

  it('honours Retry-After: the later of it and the schedule', () => {
    expect(nextAttemptDelay(1, undefined, 60, mid)).toBe(60_000);
    expect(nextAttemptDelay(2, undefined, 60, mid)).toBe(300_000);
    expect(nextAttemptDelay(1, undefined, 0, mid)).toBe(5_000);
  });

  it('takes a schedule of its own (the sample app sets short ones) and refuses a bad attempt count', () => {
    expect(nextAttemptDelay(1, [0, 50, 100], undefined, mid)).toBe(50);
    expect(nextAttemptDelay(2, [0, 50, 100], undefined, mid)).toBe(100);
    expect(() => nextAttemptDelay(0)).toThrow(RangeError);
  });
});
