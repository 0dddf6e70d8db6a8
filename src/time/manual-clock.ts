import { Clock, type ClockTimer } from './clock.js';

interface PendingTimer {
  at: number;
  /** A repeating timer's period. */
  every?: number;
  /** Order of setting, for timers due at the same time. */
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when it is told to: the time limits, waits, windows, leases and retry delays of
 * the module pass at once instead of in real time. Its timers fire as the time passes them, in order of
 * their due time (then of setting), each with the clock set to its own due time. A repeating timer fires at
 * most once per move, as a Node interval does after the event loop was blocked: moving a year does not run
 * a five-second loop six million times.
 */
export class ManualClock extends Clock {
  private readonly timers = new Set<PendingTimer>();
  private seq = 0;

  constructor(private current = 0) {
    super();
  }

  now(): number {
    return this.current;
  }

  setTimer(fn: () => void, ms: number): ClockTimer {
    const timer: PendingTimer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.add(timer);
    return { clear: () => void this.timers.delete(timer) };
  }

  override setRepeating(fn: () => void, ms: number): ClockTimer {
    const timer: PendingTimer = { at: this.current + Math.max(1, ms), seq: this.seq++, fn, every: Math.max(1, ms) };
    this.timers.add(timer);
    return { clear: () => void this.timers.delete(timer) };
  }

  /** Timers set and not yet fired or cleared. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  /** Moves the time forward by `ms`, firing every timer it passes, synchronously. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`A clock moves forward only, not by ${ms} ms`);
    const end = this.current + ms;
    for (let timer = this.nextDue(end); timer; timer = this.nextDue(end)) this.fire(timer, end);
    this.current = end;
  }

  /**
   * Moves the time forward by `ms` like `advance`, letting the work each fired timer starts (database writes,
   * promises) go on between timers and at the end: what a test awaits when a timer's effect is asynchronous.
   */
  async tick(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`A clock moves forward only, not by ${ms} ms`);
    const end = this.current + ms;
    await settle();
    for (let timer = this.nextDue(end); timer; timer = this.nextDue(end)) {
      this.fire(timer, end);
      await settle();
    }
    this.current = end;
    await settle();
  }

  /** Sets the time (ms since the epoch, or since the test's zero), firing nothing. */
  set(ms: number): void {
    this.current = ms;
  }

  private nextDue(end: number): PendingTimer | undefined {
    let first: PendingTimer | undefined;
    for (const t of this.timers) if (t.at <= end && (!first || t.at < first.at || (t.at === first.at && t.seq < first.seq))) first = t;
    return first;
  }

  /** Fires one timer at its time; a repeating one comes back a period later, or a period after `end` when that is past. */
  private fire(timer: PendingTimer, end: number): void {
    this.current = Math.max(this.current, timer.at);
    if (timer.every === undefined) this.timers.delete(timer);
    else timer.at = timer.at + timer.every > end ? timer.at + timer.every : end + timer.every;
    timer.fn();
  }
}

/** Lets pending promise reactions and I/O callbacks run (a few turns of the event loop). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
