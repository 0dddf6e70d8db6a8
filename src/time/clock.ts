/**
 * Where a part reads the time (ms since the epoch) instead of calling `Date.now()` itself, so that a test can
 * move the time rather than wait it out. A leaf: it imports nothing, so any folder may use it.
 */
export abstract class Clock {
  abstract now(): number;
}

/** The system's clock, `Date.now()`: what every part uses unless a test gives it another. */
export const SYSTEM_CLOCK: Clock = Object.freeze({ now: () => Date.now() });
