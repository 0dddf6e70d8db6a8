import { INVOCATION_STATUSES, TERMINAL_STATUSES, type InvocationStatus } from './records.js';

/** The statuses a run finishes in, in the order of `INVOCATION_STATUSES`: what the Overview counts per bucket. */
export const FINISHED_STATUSES = INVOCATION_STATUSES.filter((s) => TERMINAL_STATUSES.has(s)) as Array<
  Exclude<InvocationStatus, 'queued' | 'running'>
>;
export type FinishedStatus = (typeof FINISHED_STATUSES)[number];

/** What an Overview covers: `[from, to)`, cut in buckets of `bucketMs` (`to - from` a whole number of them). */
export interface OverviewQuery {
  from: Date;
  to: Date;
  bucketMs: number;
}

/**
 * The 50th and 95th percentiles of some milliseconds, by nearest rank: the smallest value with at least p % of
 * the values at or below it (the `⌈p·n/100⌉`-th smallest). Exact, and the same on every storage.
 */
export interface Percentiles {
  p50: number;
  p95: number;
}

/** One bucket of an Overview: `[start, start + bucketMs)`. */
export interface OverviewBucketRecord {
  start: Date;
  /** Runs whose `finishedAt` falls in the bucket, by final status (0 when none). */
  finished: Record<FinishedStatus, number>;
  /** Run duration (`startedAt` → `finishedAt`) of the runs finished in the bucket that had started; null when none. */
  duration: Percentiles | null;
  /** Queue wait (`createdAt` → `startedAt`) of the runs started in the bucket; null when none. */
  queueWait: Percentiles | null;
}

/**
 * Everything the admin's Overview shows, across all nodes: runs per bucket, percentiles per bucket and over the
 * whole window, the backlog now, and how callbacks fare.
 */
export interface RunOverviewRecord {
  /** Every bucket of the window, oldest first (`(to - from) / bucketMs` of them, empty ones included). */
  buckets: OverviewBucketRecord[];
  /** Over the whole window, as per bucket. */
  duration: Percentiles | null;
  queueWait: Percentiles | null;
  /** Runs `queued` and `running` now. */
  backlog: { queued: number; running: number };
  callbacks: {
    /** Deliveries that failed for good (retry schedule used up) with their last attempt in the window. */
    failedDeliveries: number;
    /** Deliveries pending now after at least one failed attempt (waiting for a retry). */
    retryingDeliveries: number;
    /** Callbacks disabled now (410 Gone, or too many failures in a row). */
    disabledCallbacks: number;
  };
}

/**
 * The Overview read of a storage (`storage.overview`): one answer for the whole window, read from what is stored,
 * so it covers every node. Every implementation passes test/contracts/run-overview.contract.ts.
 */
export abstract class RunOverview {
  abstract read(query: OverviewQuery): Promise<RunOverviewRecord>;
}

/** A count of runs finished in a bucket with one status (rows of a GROUP BY). */
export interface FinishedCount {
  bucket: number;
  status: string;
  count: number;
}

/** Percentiles of one bucket, or of the whole window (`bucket` null). */
export interface PercentileRow extends Percentiles {
  bucket: number | null;
}

/** The rank (1-based, of `n` values in ascending order) of the `pct`-th percentile by nearest rank. */
function nearestRank(pct: number, n: number): number {
  return Math.max(1, Math.floor((pct * n + 99) / 100));
}

/** Percentiles of `values` (any order) by nearest rank; null when there are none. */
export function percentilesOf(values: number[]): Percentiles | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: sorted[nearestRank(50, sorted.length) - 1], p95: sorted[nearestRank(95, sorted.length) - 1] };
}

/** The buckets and window figures from a storage's grouped rows: every bucket of the window, empty ones included. */
export function assembleOverview(
  query: OverviewQuery,
  rows: {
    finished: FinishedCount[];
    duration: PercentileRow[];
    queueWait: PercentileRow[];
    backlog: RunOverviewRecord['backlog'];
    callbacks: RunOverviewRecord['callbacks'];
  },
): RunOverviewRecord {
  const count = Math.round((query.to.getTime() - query.from.getTime()) / query.bucketMs);
  const buckets: OverviewBucketRecord[] = Array.from({ length: count }, (_, i) => ({
    start: new Date(query.from.getTime() + i * query.bucketMs),
    finished: Object.fromEntries(FINISHED_STATUSES.map((s) => [s, 0])) as Record<FinishedStatus, number>,
    duration: null,
    queueWait: null,
  }));
  for (const row of rows.finished) {
    const bucket = buckets[row.bucket];
    if (bucket && (FINISHED_STATUSES as string[]).includes(row.status)) bucket.finished[row.status as FinishedStatus] += row.count;
  }
  const window: Pick<RunOverviewRecord, 'duration' | 'queueWait'> = { duration: null, queueWait: null };
  for (const field of ['duration', 'queueWait'] as const) {
    for (const { bucket, p50, p95 } of rows[field]) {
      if (bucket === null) window[field] = { p50, p95 };
      else if (buckets[bucket]) buckets[bucket][field] = { p50, p95 };
    }
  }
  return { buckets, ...window, backlog: rows.backlog, callbacks: rows.callbacks };
}
