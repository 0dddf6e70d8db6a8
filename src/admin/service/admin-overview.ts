import { Inject, Injectable } from '@nestjs/common';
import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { BAD_ADMIN_FIELD } from '../../errors/webhook-trigger.messages.js';
import { FINISHED_STATUSES, RunOverview, type RunOverviewRecord } from '../../persistence/run-overview.js';
import { Clock } from '../../time/clock.js';
import { OVERVIEW_WINDOWS, type OverviewBucketView, type OverviewView, type OverviewWindow } from '../admin-views.js';

/**
 * The Overview of runs across every node (read from the storage, so it sees what every node stored): a window
 * ending with the bucket that holds now, so buckets keep their edges from one read to the next. Behind
 * `WebhookTriggersAdmin`.
 */
@Injectable()
export class AdminOverview {
  constructor(
    private readonly overview: RunOverview,
    @Inject(Clock) private readonly clock: Clock,
  ) {}

  async getOverview(window: OverviewWindow = 'hour'): Promise<OverviewView> {
    if (!Object.prototype.hasOwnProperty.call(OVERVIEW_WINDOWS, window)) {
      throw new WebhookAdminInputError(BAD_ADMIN_FIELD('window', `one of ${Object.keys(OVERVIEW_WINDOWS).join(', ')}`));
    }
    const { spanMs, bucketMs } = OVERVIEW_WINDOWS[window];
    const to = (Math.floor(this.clock.now() / bucketMs) + 1) * bucketMs;
    const from = to - spanMs;
    const read = await this.overview.read({ from: new Date(from), to: new Date(to), bucketMs });
    return toView(window, from, to, bucketMs, read);
  }
}

function toView(window: OverviewWindow, from: number, to: number, bucketMs: number, read: RunOverviewRecord): OverviewView {
  const buckets = read.buckets.map((b): OverviewBucketView => ({
    start: b.start,
    finished: b.finished,
    durationMs: b.duration,
    queueWaitMs: b.queueWait,
  }));
  const finished = Object.fromEntries(
    FINISHED_STATUSES.map((s) => [s, buckets.reduce((sum, b) => sum + b.finished[s], 0)]),
  ) as OverviewBucketView['finished'];
  return {
    window,
    from: new Date(from),
    to: new Date(to),
    bucketMs,
    buckets,
    finished,
    durationMs: read.duration,
    queueWaitMs: read.queueWait,
    backlog: read.backlog,
    callbacks: read.callbacks,
  };
}
