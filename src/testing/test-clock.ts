import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { TESTING_FAKE_TIMERS } from '../errors/webhook-trigger.messages.js';
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

  /** As `ManualClock.tick`; refused, saying what to do, under fake timers (its settling would never end). */
  override tick(ms: number): Promise<void> {
    if (fakeImmediate()) return Promise.reject(new WebhookConfigurationError(TESTING_FAKE_TIMERS));
    return super.tick(ms);
  }
}

/** Whether `setImmediate` is a fake one: Jest's and Vitest's (@sinonjs/fake-timers mark theirs `clock`) or Jest's legacy mock. */
function fakeImmediate(): boolean {
  const fn = globalThis.setImmediate as unknown as { clock?: unknown; _isMockFunction?: unknown };
  return fn.clock !== undefined || fn._isMockFunction === true;
}
