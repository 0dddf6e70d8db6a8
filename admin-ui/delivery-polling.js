// @ts-check
// When a delivery log is read again by itself: while a delivery is due soon. Pure (unit-tested).

/** The first re-read waits at least 1 s; each next one twice as long, up to 10 s. */
export const POLL_MIN_MS = 1000;
export const POLL_MAX_MS = 10_000;
/** A delivery due later than this (a retry hours away) is not waited for; Refresh shows it. */
export const POLL_HORIZON_MS = 60_000;

/**
 * The next re-read of a log: null when none is due (no pending delivery, or none within the horizon).
 * `pollDelay` is the current back-off; `next` is the one after this re-read.
 * @param {{ status: string, nextAttemptAt: string | null }[]} list
 * @param {number} now
 * @param {number} pollDelay
 * @returns {{ delay: number, next: number } | null}
 */
export function nextPoll(list, now, pollDelay) {
  const pending = list.filter((d) => d.status === 'pending');
  if (pending.length === 0) return null;
  const due = Math.min(...pending.map((d) => (d.nextAttemptAt ? Date.parse(d.nextAttemptAt) - now : 0)));
  if (!(due <= POLL_HORIZON_MS)) return null;
  return { delay: Math.max(due + 500, pollDelay), next: Math.min(pollDelay * 2, POLL_MAX_MS) };
}
