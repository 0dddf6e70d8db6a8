import type { DeliveryStatus, InvocationStatus } from '../../src/persistence/records.js';
import type { OverviewQuery } from '../../src/persistence/run-overview.js';
import type { WebhookStorage } from '../../src/persistence/webhook-storage.js';
import { at, eachFreshStorage, numberedRuns, type OpenStorage } from './storages.js';

const TRIGGER_A = 'trg_OVERVIEWAAAAAAAAA';
const TRIGGER_B = 'trg_OVERVIEWBBBBBBBBB';
const MINUTE = 60_000;
/** Three one-minute buckets: [600 s, 660 s), [660 s, 720 s), [720 s, 780 s). */
const WINDOW: OverviewQuery = { from: at(600), to: at(780), bucketMs: MINUTE };
const none = { succeeded: 0, failed: 0, cancelled: 0, timed_out: 0 };

/**
 * The Overview read (`storage.overview`) on every implementation (test/contracts/storage.contract.ts): runs per
 * bucket by final status, nearest-rank percentiles per bucket and over the window, the backlog now, and the
 * callbacks' failures. Call inside a `describe`.
 */
export function runOverviewContract(open: OpenStorage): void {
  let s: WebhookStorage;
  eachFreshStorage(open, (storage) => (s = storage));
  const newRun = numberedRuns(TRIGGER_A);

  /** A run created at `created` (seconds), started and finished when given, ending in `status`. */
  async function run(created: number, started: number | null, finished: number | null, status: InvocationStatus): Promise<string> {
    const r = newRun({ createdAt: at(created) });
    await s.invocations.insert(r);
    if (started !== null) expect(await s.invocations.markRunning(r.id, at(started), 'node-a', at(started + 3600))).not.toBeNull();
    if (finished !== null) {
      const from = started === null ? 'queued' : 'running';
      expect(await s.invocations.transition(r.id, from, status, { finishedAt: at(finished) })).toBe(true);
    }
    return r.id;
  }

  let deliveries = 0;
  /**
   * A delivery of the callback of TRIGGER_A as the sender leaves it: one attempt at `attemptedAt` (seconds) ending
   * in `status`; or abandoned with no attempt (`'abandoned'`); or never attempted (null).
   */
  async function delivery(outcome: { status: DeliveryStatus; attemptedAt: number } | 'abandoned' | null): Promise<void> {
    deliveries++;
    const id = `dlv_${String(deliveries).padStart(20, '0')}`;
    await s.callbacks.insertDelivery({
      id,
      triggerId: TRIGGER_A,
      invocationId: 'inv_overview_run_aaaaaaaa',
      event: 'invocation.completed',
      msgId: `msg_${String(deliveries).padStart(20, '0')}`,
      body: '{}',
      status: 'pending',
      attempts: 0,
      nextAttemptAt: at(10),
      lastAttemptAt: null,
      responseStatus: null,
      latencyMs: null,
      lastError: null,
      createdAt: at(deliveries),
    });
    if (outcome === null) return;
    expect(await s.callbacks.claim(id, 'sender', at(10), at(9000))).not.toBeNull();
    if (outcome === 'abandoned') return s.callbacks.abandon(id, 'sender', 'callback deleted');
    const { status, attemptedAt } = outcome;
    const nextAttemptAt = status === 'pending' ? at(attemptedAt + 60) : null;
    const result = { status, attemptedAt: at(attemptedAt), nextAttemptAt, responseStatus: 500, latencyMs: 5, error: 'HTTP 500' };
    expect(await s.callbacks.recordAttempt(id, 'sender', result)).toBe(true);
  }

  it('counts the runs finished in each bucket by status, from the start of the window up to (not including) its end', async () => {
    await run(590, 600, 602, 'succeeded');
    await run(600, 605, 665, 'failed');
    await run(610, 611, 661, 'succeeded');
    await run(650, 700, 730, 'timed_out');
    await run(640, null, 700, 'cancelled');
    await run(500, 520, 599, 'succeeded'); // finished before the window
    await run(740, 750, 780, 'succeeded'); // finished at its end: not counted (its start is)
    const overview = await s.overview.read(WINDOW);
    expect(overview.buckets.map((b) => b.start)).toEqual([at(600), at(660), at(720)]);
    expect(overview.buckets.map((b) => b.finished)).toEqual([
      { ...none, succeeded: 1 },
      { ...none, succeeded: 1, failed: 1, cancelled: 1 },
      { ...none, timed_out: 1 },
    ]);
  });

  it('gives p50 and p95 of run duration (by finish) and queue wait (by start), by nearest rank, per bucket and over the window', async () => {
    await run(590, 600, 602, 'succeeded'); // waited 10 s, ran 2 s
    await run(600, 605, 665, 'failed'); // waited 5 s, ran 60 s
    await run(610, 611, 661, 'succeeded'); // waited 1 s, ran 50 s
    await run(650, 700, 730, 'timed_out'); // waited 50 s, ran 30 s
    await run(640, null, 700, 'cancelled'); // never started: no duration, no wait
    await run(740, 750, 780, 'succeeded'); // waited 10 s; finished at the window's end
    await run(700, 780, null, 'running'); // started at the window's end
    const overview = await s.overview.read(WINDOW);
    expect(overview.buckets.map((b) => b.duration)).toEqual([
      { p50: 2_000, p95: 2_000 },
      { p50: 50_000, p95: 60_000 },
      { p50: 30_000, p95: 30_000 },
    ]);
    expect(overview.buckets.map((b) => b.queueWait)).toEqual([
      { p50: 5_000, p95: 10_000 },
      { p50: 50_000, p95: 50_000 },
      { p50: 10_000, p95: 10_000 },
    ]);
    expect(overview.duration).toEqual({ p50: 30_000, p95: 60_000 });
    expect(overview.queueWait).toEqual({ p50: 10_000, p95: 50_000 });
  });

  it('takes the ⌈p·n/100⌉-th smallest value: 20 runs of 1 to 20 ms give p50 10 ms and p95 19 ms', async () => {
    for (let ms = 20; ms >= 1; ms--) {
      const r = newRun({ createdAt: at(600) });
      await s.invocations.insert(r);
      await s.invocations.markRunning(r.id, at(600), 'node-a', at(4000));
      await s.invocations.transition(r.id, 'running', 'succeeded', { finishedAt: new Date(at(600).getTime() + ms) });
    }
    const overview = await s.overview.read(WINDOW);
    expect(overview.buckets[0].duration).toEqual({ p50: 10, p95: 19 });
    expect(overview.duration).toEqual({ p50: 10, p95: 19 });
    expect(overview.queueWait).toEqual({ p50: 0, p95: 0 });
  });

  it('counts the backlog now (queued and running runs, whenever created)', async () => {
    await run(100, null, null, 'queued');
    await run(770, null, null, 'queued');
    await run(5000, null, null, 'queued');
    await run(700, 780, null, 'running');
    await run(590, 600, 602, 'succeeded');
    expect((await s.overview.read(WINDOW)).backlog).toEqual({ queued: 3, running: 1 });
  });

  it('counts deliveries failed for good in the window, deliveries waiting for a retry, and disabled callbacks', async () => {
    await s.callbacks.saveCallback(
      { triggerId: TRIGGER_A, url: 'https://a.example.com/', events: ['invocation.completed'], secret: 'whsec_a' },
      at(1),
    );
    await s.callbacks.saveCallback(
      { triggerId: TRIGGER_B, url: 'https://b.example.com/', events: ['invocation.completed'], secret: 'whsec_b' },
      at(1),
    );
    expect(await s.callbacks.disable(TRIGGER_B, 'gone (410)', at(650))).toBe(true);
    await delivery({ status: 'failed', attemptedAt: 650 });
    await delivery({ status: 'failed', attemptedAt: 100 }); // before the window
    await delivery('abandoned'); // its callback went away: never attempted
    await delivery({ status: 'pending', attemptedAt: 650 }); // waits for its retry
    await delivery(null); // not attempted yet
    await delivery({ status: 'delivered', attemptedAt: 650 });
    expect((await s.overview.read(WINDOW)).callbacks).toEqual({ failedDeliveries: 1, retryingDeliveries: 1, disabledCallbacks: 1 });
  });

  it('answers every bucket of an empty window, with no percentiles', async () => {
    const day: OverviewQuery = { from: at(0), to: at(86_400), bucketMs: 30 * MINUTE };
    const overview = await s.overview.read(day);
    expect(overview.buckets).toHaveLength(48);
    expect(overview.buckets.every((b) => b.duration === null && b.queueWait === null)).toBe(true);
    expect(overview.buckets[47]).toEqual({ start: at(86_400 - 1800), finished: none, duration: null, queueWait: null });
    expect(overview).toMatchObject({
      duration: null,
      queueWait: null,
      backlog: { queued: 0, running: 0 },
      callbacks: { failedDeliveries: 0, retryingDeliveries: 0, disabledCallbacks: 0 },
    });
  });
}
