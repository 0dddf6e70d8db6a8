/** A timer set on a `Clock`; `clear()` stops it (a no-op once it fired). */
export interface ClockTimer {
  clear(): void;
}

/**
 * Where a part reads the time (ms since the epoch) and sets the timers that wait on it, instead of calling
 * `Date.now()` and `setTimeout` itself, so that a test can move the time rather than wait it out. A leaf: it
 * imports nothing, so any folder may use it.
 */
export abstract class Clock {
  abstract now(): number;
  /**
   * Calls `fn` once, when `ms` have passed on this clock. `unref`: the timer never keeps the process alive
   * (for background loops; a run's time limit or a sync's wait is held by its request anyway).
   */
  abstract setTimer(fn: () => void, ms: number, options?: { unref?: boolean }): ClockTimer;

  /** Calls `fn` every `ms` on this clock until cleared; never keeps the process alive. */
  setRepeating(fn: () => void, ms: number): ClockTimer {
    let current: ClockTimer;
    let cleared = false;
    const next = () => {
      current = this.setTimer(
        () => {
          if (cleared) return;
          next();
          fn();
        },
        ms,
        { unref: true },
      );
    };
    next();
    return {
      clear: () => {
        cleared = true;
        current.clear();
      },
    };
  }
}

/** The system's clock: `Date.now()` and Node's timers. */
class SystemClock extends Clock {
  now(): number {
    return Date.now();
  }

  setTimer(fn: () => void, ms: number, options?: { unref?: boolean }): ClockTimer {
    const timer = setTimeout(fn, ms);
    if (options?.unref) timer.unref();
    return { clear: () => clearTimeout(timer) };
  }

  override setRepeating(fn: () => void, ms: number): ClockTimer {
    const timer = setInterval(fn, ms);
    timer.unref();
    return { clear: () => clearInterval(timer) };
  }
}

/** The system's clock: what every part uses unless the `clock` extra gives another. */
export const SYSTEM_CLOCK: Clock = Object.freeze(new SystemClock());
