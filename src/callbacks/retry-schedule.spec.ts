import { DEFAULT_CALLBACK_RETRY_SCHEDULE_MS, RETRY_JITTER, nextAttemptDelay } from './retry-schedule.js';

const mid = () => 0.5; // no jitter
const low = () => 0; // the most jitter down
const high = () => 0.999999; // just under the most jitter up

// The schedule's values are written once, in retry-schedule.ts (the docs are checked against the option's default
// by src/options/defaults-docs.spec.ts); these specs say when the next attempt of a delivery comes.
describe('nextAttemptDelay', () => {
  const schedule = [0, 1_000, 60_000];

  it('waits, after each failed attempt, the delay the schedule gives the next one', () => {
    expect(nextAttemptDelay(1, schedule, undefined, mid)).toBe(1_000);
    expect(nextAttemptDelay(2, schedule, undefined, mid)).toBe(60_000);
  });

  it('gives up (null) once every attempt of the schedule was made, whatever the receiver asks', () => {
    expect(nextAttemptDelay(3, schedule, undefined, mid)).toBeNull();
    expect(nextAttemptDelay(3, schedule, 60)).toBeNull();
    expect(nextAttemptDelay(1, [0], undefined, mid)).toBeNull();
  });

  it('without a schedule of its own, follows the default: a first attempt at once, then delays that never shrink', () => {
    expect(DEFAULT_CALLBACK_RETRY_SCHEDULE_MS[0]).toBe(0);
    DEFAULT_CALLBACK_RETRY_SCHEDULE_MS.forEach((delay, i) => {
      if (i === 0) return;
      expect(delay).toBeGreaterThanOrEqual(DEFAULT_CALLBACK_RETRY_SCHEDULE_MS[i - 1]);
      expect(nextAttemptDelay(i, undefined, undefined, mid)).toBe(delay);
    });
    expect(nextAttemptDelay(DEFAULT_CALLBACK_RETRY_SCHEDULE_MS.length, undefined, undefined, mid)).toBeNull();
  });

  it('moves each delay by up to the jitter either way, and spreads the delays of many deliveries', () => {
    expect(nextAttemptDelay(1, schedule, undefined, low)).toBe(1_000 * (1 - RETRY_JITTER));
    expect(nextAttemptDelay(1, schedule, undefined, high)).toBe(1_000 * (1 + RETRY_JITTER));
    const seen = new Set(Array.from({ length: 50 }, () => nextAttemptDelay(2, schedule)));
    expect(seen.size).toBeGreaterThan(10);
    for (const delay of seen) {
      expect(delay).toBeGreaterThanOrEqual(60_000 * (1 - RETRY_JITTER));
      expect(delay).toBeLessThanOrEqual(60_000 * (1 + RETRY_JITTER));
    }
  });

  it("honours the receiver's Retry-After: the later of it and the schedule's delay", () => {
    expect(nextAttemptDelay(1, schedule, 30, mid)).toBe(30_000);
    expect(nextAttemptDelay(2, schedule, 30, mid)).toBe(60_000);
    expect(nextAttemptDelay(1, schedule, 0, mid)).toBe(1_000);
  });

  it('refuses an attempt count that is not a whole number from 1', () => {
    for (const bad of [0, -1, 1.5]) expect(() => nextAttemptDelay(bad, schedule)).toThrow(RangeError);
  });
});
