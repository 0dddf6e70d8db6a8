import { RETRY_ATTEMPTS_INVALID } from '../errors/webhook-trigger.messages.js';

/**
 * When each attempt of a delivery is made, as delays in ms from the previous failure: the Standard Webhooks
 * schedule (immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), eight attempts over about a day.
 */
export const DEFAULT_CALLBACK_RETRY_SCHEDULE_MS: readonly number[] = Object.freeze([
  0,
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
]);

/** Each delay is moved by up to this share either way, so failed deliveries do not all come back together. */
export const RETRY_JITTER = 0.2;

/**
 * The delay in ms before the next attempt, after `attemptsMade` attempts (1 after the first one failed), or null
 * when the schedule is used up (give up). The schedule's delay gets ±20% jitter; a receiver's `Retry-After` is
 * honoured: the later of the two wins. `random` is `Math.random` (tests pass their own).
 */
export function nextAttemptDelay(
  attemptsMade: number,
  schedule: readonly number[] = DEFAULT_CALLBACK_RETRY_SCHEDULE_MS,
  retryAfterSec?: number,
  random: () => number = Math.random,
): number | null {
  if (!Number.isInteger(attemptsMade) || attemptsMade < 1) throw new RangeError(RETRY_ATTEMPTS_INVALID(attemptsMade));
  const base = schedule[attemptsMade];
  if (base === undefined) return null;
  const jittered = Math.round(base * (1 + RETRY_JITTER * (2 * random() - 1)));
  const asked = retryAfterSec !== undefined && Number.isFinite(retryAfterSec) && retryAfterSec > 0 ? retryAfterSec * 1000 : 0;
  return Math.max(jittered, asked);
}
