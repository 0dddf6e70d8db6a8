import {
  assembleOverview,
  percentilesOf,
  RunOverview,
  type FinishedCount,
  type OverviewQuery,
  type PercentileRow,
  type RunOverviewRecord,
} from '../run-overview.js';
import type { InMemoryWebhookDatabase } from './in-memory-database.js';

/** `RunOverview` on an `InMemoryWebhookDatabase`: every run looked at, percentiles by nearest rank as the SQL store. */
export class InMemoryRunOverview extends RunOverview {
  constructor(private readonly database: InMemoryWebhookDatabase) {
    super();
  }

  read(query: OverviewQuery): Promise<RunOverviewRecord> {
    return this.database.read(undefined, () => {
      const from = query.from.getTime();
      const to = query.to.getTime();
      const bucketOf = (at: Date) => Math.floor((at.getTime() - from) / query.bucketMs);
      const inWindow = (at: Date | null): at is Date => at !== null && at.getTime() >= from && at.getTime() < to;
      const finished = new Map<string, FinishedCount>();
      const durations: Array<[number, number]> = [];
      const waits: Array<[number, number]> = [];
      const backlog = { queued: 0, running: 0 };
      for (const run of this.database.invocations.values()) {
        if (run.status === 'queued' || run.status === 'running') backlog[run.status]++;
        if (inWindow(run.finishedAt)) {
          const bucket = bucketOf(run.finishedAt);
          const key = `${bucket} ${run.status}`;
          const row = finished.get(key) ?? { bucket, status: run.status, count: 0 };
          row.count++;
          finished.set(key, row);
          if (run.startedAt) durations.push([bucket, run.finishedAt.getTime() - run.startedAt.getTime()]);
        }
        if (inWindow(run.startedAt)) waits.push([bucketOf(run.startedAt), run.startedAt.getTime() - run.createdAt.getTime()]);
      }
      const deliveries = [...this.database.deliveries.values()];
      return assembleOverview(query, {
        finished: [...finished.values()],
        duration: percentileRows(durations),
        queueWait: percentileRows(waits),
        backlog,
        callbacks: {
          failedDeliveries: deliveries.filter((d) => d.status === 'failed' && inWindow(d.lastAttemptAt)).length,
          retryingDeliveries: deliveries.filter((d) => d.status === 'pending' && d.attempts > 0).length,
          disabledCallbacks: [...this.database.callbacks.values()].filter((c) => !c.enabled).length,
        },
      });
    });
  }
}

/** Percentiles of each bucket's values and of all of them (`bucket` null). */
function percentileRows(values: Array<[bucket: number, value: number]>): PercentileRow[] {
  const byBucket = new Map<number, number[]>();
  for (const [bucket, value] of values) {
    const list = byBucket.get(bucket);
    if (list) list.push(value);
    else byBucket.set(bucket, [value]);
  }
  const rows: PercentileRow[] = [];
  for (const [bucket, list] of byBucket) rows.push({ bucket, ...percentilesOf(list)! });
  const whole = percentilesOf(values.map(([, value]) => value));
  if (whole) rows.push({ bucket: null, ...whole });
  return rows;
}
