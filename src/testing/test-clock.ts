import { ManualClock } from '../time/manual-clock.js';

/**
 * The testing kit's clock: it moves only when a spec moves it (`advance`, or `tick` to let the work each
 * timer starts finish), and the module reads every time and sets every timer on it: a bot's time limit,
 * a sync's wait (408), rate-limit windows, idempotency windows, leases and their recovery, callback retries.
 * Starts at the real time unless given another.
 */
export class TestClock extends ManualClock {
  constructor(start: number = Date.now()) {
    super(start);
  }
}
