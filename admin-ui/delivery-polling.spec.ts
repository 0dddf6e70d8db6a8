import { nextPoll, POLL_HORIZON_MS, POLL_MAX_MS, POLL_MIN_MS } from './delivery-polling.js';

const now = Date.parse('2026-11-25T10:00:00Z');
const dueIn = (ms: number) => ({ status: 'pending', nextAttemptAt: new Date(now + ms).toISOString() });

describe('nextPoll', () => {
  it('reads nothing again without a pending delivery', () => {
    expect(nextPoll([{ status: 'delivered', nextAttemptAt: null }], now, POLL_MIN_MS)).toBeNull();
  });

  it('waits half a second past the soonest due, at least the back-off, and doubles the back-off', () => {
    expect(nextPoll([dueIn(5_000), dueIn(2_000)], now, POLL_MIN_MS)).toEqual({ delay: 2_500, next: 2 * POLL_MIN_MS });
    expect(nextPoll([dueIn(0)], now, 4_000)).toEqual({ delay: 4_000, next: 8_000 });
    expect(nextPoll([dueIn(0)], now, 8_000)).toEqual({ delay: 8_000, next: POLL_MAX_MS });
  });

  it('treats a pending delivery without a time as due now', () => {
    expect(nextPoll([{ status: 'pending', nextAttemptAt: null }], now, POLL_MIN_MS)).toEqual({ delay: POLL_MIN_MS, next: 2_000 });
  });

  it('does not wait for a delivery due beyond the horizon', () => {
    expect(nextPoll([dueIn(POLL_HORIZON_MS + 1)], now, POLL_MIN_MS)).toBeNull();
    expect(nextPoll([dueIn(POLL_HORIZON_MS)], now, POLL_MIN_MS)).not.toBeNull();
  });
});
