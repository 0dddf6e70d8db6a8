import {
  assembleOverview,
  RunOverview,
  type FinishedCount,
  type OverviewQuery,
  type PercentileRow,
  type RunOverviewRecord,
} from '../run-overview.js';
import { SqlExecutor } from './sql-executor.js';

/** A run's measure for the percentiles: the time column that places it in a bucket, and the value measured. */
interface Measure {
  at: string;
  value: string;
  /** Runs that have the measure at all. */
  where: string;
}

const DURATION: Measure = { at: 'finished_at', value: 'finished_at - started_at', where: 'started_at IS NOT NULL' };
const QUEUE_WAIT: Measure = { at: 'started_at', value: 'started_at - created_at', where: 'started_at IS NOT NULL' };

/**
 * The bucket of a time column, `(column - from) / bucketMs`: integer division on both databases (SQLite binds a
 * JavaScript number as a REAL, hence the casts).
 */
const BUCKET_OF = (column: string) => `(${column} - CAST(? AS BIGINT)) / CAST(? AS BIGINT)`;

/** The whole window's row among the percentile rows (a bucket number no bucket has). */
const WHOLE_WINDOW = -1;

/**
 * Percentiles by nearest rank, in one SQL text for SQLite (which has no percentile function) and PostgreSQL:
 * rank the window's values per bucket (or over the whole window) and keep the `⌈p·n/100⌉`-th. Integer arithmetic,
 * so both databases pick the same row. The window is a range of the indexed time column.
 */
function percentileSql(measure: Measure, perBucket: boolean): string {
  const bucket = perBucket ? BUCKET_OF(measure.at) : String(WHOLE_WINDOW);
  return (
    `SELECT bucket, MAX(CASE WHEN rn = (50 * n + 99) / 100 THEN d END) AS p50, MAX(CASE WHEN rn = (95 * n + 99) / 100 THEN d END) AS p95 ` +
    `FROM (SELECT bucket, d, ROW_NUMBER() OVER (PARTITION BY bucket ORDER BY d) AS rn, COUNT(*) OVER (PARTITION BY bucket) AS n ` +
    `FROM (SELECT ${bucket} AS bucket, ${measure.value} AS d FROM webhook_invocations ` +
    `WHERE ${measure.at} >= ? AND ${measure.at} < ? AND ${measure.where}) AS measured) AS ranked GROUP BY bucket`
  );
}

const FINISHED_SQL =
  `SELECT ${BUCKET_OF('finished_at')} AS bucket, status, COUNT(*) AS n FROM webhook_invocations ` +
  `WHERE finished_at >= ? AND finished_at < ? GROUP BY 1, 2`;

// Each count reads an index: (status, lease_expires_at) for runs, (status, next_attempt_at) and
// (status, last_attempt_at) for deliveries; callbacks are one row per trigger.
const NOW_SQL =
  `SELECT (SELECT COUNT(*) FROM webhook_invocations WHERE status = 'queued') AS queued, ` +
  `(SELECT COUNT(*) FROM webhook_invocations WHERE status = 'running') AS running, ` +
  `(SELECT COUNT(*) FROM webhook_callback_deliveries WHERE status = 'failed' AND last_attempt_at >= ? AND last_attempt_at < ?) AS failed, ` +
  `(SELECT COUNT(*) FROM webhook_callback_deliveries WHERE status = 'pending' AND attempts > 0) AS retrying, ` +
  `(SELECT COUNT(*) FROM webhook_callbacks WHERE enabled = 0) AS disabled`;

/** The Overview on the module's SQL storage (indexes: migration WebhookTriggersOverview). */
export class SqlRunOverview extends RunOverview {
  constructor(private readonly db: SqlExecutor) {
    super();
  }

  async read(query: OverviewQuery): Promise<RunOverviewRecord> {
    const from = query.from.getTime();
    const to = query.to.getTime();
    const [finished, duration, queueWait, now] = await Promise.all([
      this.db.read(FINISHED_SQL, [from, query.bucketMs, from, to]),
      this.percentiles(DURATION, from, to, query.bucketMs),
      this.percentiles(QUEUE_WAIT, from, to, query.bucketMs),
      this.db.read(NOW_SQL, [from, to]),
    ]);
    const counts = now.rows[0] ?? {};
    return assembleOverview(query, {
      finished: finished.rows.map((r): FinishedCount => ({ bucket: Number(r.bucket), status: String(r.status), count: Number(r.n) })),
      duration,
      queueWait,
      backlog: { queued: Number(counts.queued ?? 0), running: Number(counts.running ?? 0) },
      callbacks: {
        failedDeliveries: Number(counts.failed ?? 0),
        retryingDeliveries: Number(counts.retrying ?? 0),
        disabledCallbacks: Number(counts.disabled ?? 0),
      },
    });
  }

  private async percentiles(measure: Measure, from: number, to: number, bucketMs: number): Promise<PercentileRow[]> {
    const [perBucket, whole] = await Promise.all([
      this.db.read(percentileSql(measure, true), [from, bucketMs, from, to]),
      this.db.read(percentileSql(measure, false), [from, to]),
    ]);
    return [...perBucket.rows, ...whole.rows].map((r) => ({
      bucket: Number(r.bucket) === WHOLE_WINDOW ? null : Number(r.bucket),
      p50: Number(r.p50),
      p95: Number(r.p95),
    }));
  }
}
