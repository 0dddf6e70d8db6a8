import { ManualClock } from '../../../test/fakes/manual-clock.js';
import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { InMemoryWebhookStorage } from '../../persistence/memory/in-memory-webhook-storage.js';
import type { OverviewWindow } from '../admin-views.js';
import { AdminOverview } from './admin-overview.js';

const MINUTE = 60_000;
/** 10:17:30 UTC: in the bucket [10:17, 10:18) by minute, [10:00, 10:30) by half hour. */
const NOW = Date.UTC(2026, 0, 2, 10, 17, 30);

describe('AdminOverview', () => {
  let storage: InMemoryWebhookStorage;
  let overview: AdminOverview;

  beforeEach(() => {
    storage = new InMemoryWebhookStorage();
    overview = new AdminOverview(storage.overview, new ManualClock(NOW));
  });

  /** A run created `waitMs` before it started, `ranMs` before it finished at `finishedAt`. */
  async function finishedRun(n: number, finishedAt: number, status: 'succeeded' | 'failed', ranMs: number, waitMs: number) {
    const startedAt = finishedAt - ranMs;
    const id = `inv_${String(n).padStart(22, '0')}`;
    await storage.invocations.insert({
      ...{ id, triggerId: 'trg_a', botId: 'echo', accountId: 'acct', inputs: {}, credits: 1 },
      ...{ idempotencyKey: null, requestHash: null, createdAt: new Date(startedAt - waitMs) },
    });
    await storage.invocations.markRunning(id, new Date(startedAt), 'node', new Date(NOW + 60 * MINUTE));
    await storage.invocations.transition(id, 'running', status, { finishedAt: new Date(finishedAt) });
  }

  it('the last hour: 60 one-minute buckets, the last one holding now', async () => {
    const view = await overview.getOverview('hour');
    expect(view).toMatchObject({ window: 'hour', bucketMs: MINUTE });
    expect(view.to).toEqual(new Date(Date.UTC(2026, 0, 2, 10, 18)));
    expect(view.from).toEqual(new Date(Date.UTC(2026, 0, 2, 9, 18)));
    expect(view.buckets).toHaveLength(60);
    expect(view.buckets[59].start).toEqual(new Date(Date.UTC(2026, 0, 2, 10, 17)));
  });

  it('the last day: 48 half-hour buckets, the last one holding now', async () => {
    const view = await overview.getOverview('day');
    expect(view.to).toEqual(new Date(Date.UTC(2026, 0, 2, 10, 30)));
    expect(view.from).toEqual(new Date(Date.UTC(2026, 0, 1, 10, 30)));
    expect(view.buckets).toHaveLength(48);
    expect(view.bucketMs).toBe(30 * MINUTE);
  });

  it('sums the buckets into the window’s counts and passes the percentiles on in milliseconds', async () => {
    await finishedRun(1, NOW - 1_000, 'succeeded', 400, 100);
    await finishedRun(2, NOW - 5 * MINUTE, 'failed', 2_000, 300);
    await finishedRun(3, NOW - 2 * 60 * MINUTE, 'succeeded', 9_000, 9_000); // outside the hour, inside the day
    const hour = await overview.getOverview('hour');
    expect(hour.finished).toEqual({ succeeded: 1, failed: 1, cancelled: 0, timed_out: 0 });
    expect(hour.buckets[59].finished.succeeded).toBe(1);
    expect(hour.buckets[59].durationMs).toEqual({ p50: 400, p95: 400 });
    expect(hour.durationMs).toEqual({ p50: 400, p95: 2_000 });
    expect(hour.queueWaitMs).toEqual({ p50: 100, p95: 300 });
    expect((await overview.getOverview('day')).finished).toEqual({ succeeded: 2, failed: 1, cancelled: 0, timed_out: 0 });
  });

  it('refuses any other window, naming the ones there are', async () => {
    for (const window of ['week', '', 'constructor', 'toString'] as unknown as OverviewWindow[]) {
      const error = await overview.getOverview(window).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WebhookAdminInputError);
      expect((error as Error).message).toBe('window must be one of hour, day');
    }
  });
});
