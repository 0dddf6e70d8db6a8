import { type FactoryProvider, type OnModuleDestroy } from '@nestjs/common';
import type { Attributes, BatchObservableCallback, Counter, Histogram, Meter, ObservableGauge } from '@opentelemetry/api';
import { WEBHOOK_TRIGGER_EXTRAS } from '../options/module.constants.js';
import type { InvocationRecord, InvocationStatus } from '../persistence/records.js';
import { INSTRUMENTATION_SCOPE, otelApi } from './otel-api.js';

/** The webhook routes, as the `operation` label of `webhook_trigger_requests_total` names them. */
export type WebhookOperation = 'trigger' | 'sync' | 'status' | 'cancel' | 'events';

/** How one callback attempt went, the `outcome` label of `webhook_trigger_callback_deliveries_total`. */
export type CallbackAttemptOutcome = 'delivered' | 'retrying' | 'failed' | 'gone' | 'abandoned';

/** What the process gauges read, each time a reader collects. */
export interface ProcessCounts {
  /** Runs dispatched here and not started (`BotRunner.backlog()`). */
  backlog(): number;
  /** Runs whose bot is executing here, or whose outcome is being stored. */
  running(): number;
  /** Sync requests waiting here for their run to finish. */
  syncWaiters(): number;
  /** Run event streams open here. */
  eventStreams(): number;
}

/** What a run's state change tells the metrics. */
export type RunFacts = Pick<InvocationRecord, 'botId' | 'accountId' | 'credits' | 'createdAt'> & { startedAt?: Date | null };

/**
 * Upper bounds (seconds) of the run duration and queue wait histograms: from a quick bot (50 ms) to the
 * default time limit (15 min), with the seconds-long runs in between spread over several buckets.
 */
export const RUN_SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900];

/**
 * The metrics' OpenTelemetry names. The Prometheus exporter turns the dots into underscores and adds
 * `_total` to counters (monotonic sums), never a unit suffix, so each is scraped as the name in its comment.
 */
export const METRIC_NAMES = {
  requests: 'webhook_trigger.requests', // webhook_trigger_requests_total
  runsFinished: 'webhook_trigger.runs_finished', // webhook_trigger_runs_finished_total
  runDuration: 'webhook_trigger.run_duration_seconds', // webhook_trigger_run_duration_seconds
  queueWait: 'webhook_trigger.queue_wait_seconds', // webhook_trigger_queue_wait_seconds
  backlog: 'webhook_trigger.backlog_runs', // webhook_trigger_backlog_runs
  running: 'webhook_trigger.running_runs', // webhook_trigger_running_runs
  syncWaiters: 'webhook_trigger.sync_waiters', // webhook_trigger_sync_waiters
  eventStreams: 'webhook_trigger.event_streams', // webhook_trigger_event_streams
  creditsCharged: 'webhook_trigger.credits_charged', // webhook_trigger_credits_charged_total
  callbackDeliveries: 'webhook_trigger.callback_deliveries', // webhook_trigger_callback_deliveries_total
} as const;

interface Instruments {
  requests: Counter;
  runsFinished: Counter;
  runDuration: Histogram;
  queueWait: Histogram;
  creditsCharged: Counter;
  callbackDeliveries: Counter;
  gauges: ObservableGauge[];
}

function createInstruments(meter: Meter): Instruments {
  const seconds = { unit: 's', advice: { explicitBucketBoundaries: RUN_SECONDS_BUCKETS } };
  const gauge = (name: string, description: string, unit = '{run}') => meter.createObservableGauge(name, { description, unit });
  return {
    requests: meter.createCounter(METRIC_NAMES.requests, { description: 'Answers of the webhook routes', unit: '{request}' }),
    runsFinished: meter.createCounter(METRIC_NAMES.runsFinished, { description: 'Runs that ended, by final status', unit: '{run}' }),
    runDuration: meter.createHistogram(METRIC_NAMES.runDuration, { description: 'Runs from started to finished', ...seconds }),
    queueWait: meter.createHistogram(METRIC_NAMES.queueWait, { description: 'Runs from accepted to started', ...seconds }),
    creditsCharged: meter.createCounter(METRIC_NAMES.creditsCharged, { description: 'Credits debited for accepted runs' }),
    callbackDeliveries: meter.createCounter(METRIC_NAMES.callbackDeliveries, {
      description: 'Callback delivery attempts, by outcome',
      unit: '{attempt}',
    }),
    gauges: [
      gauge(METRIC_NAMES.backlog, 'Runs dispatched in this process and not started'),
      gauge(METRIC_NAMES.running, 'Runs executing in this process'),
      gauge(METRIC_NAMES.syncWaiters, 'Sync requests waiting in this process'),
      gauge(METRIC_NAMES.eventStreams, 'Run event streams open in this process', '{stream}'),
    ],
  };
}

/**
 * Every instrument of the module, made once from the host's meter (`@opentelemetry/api`): the API's no-op
 * meter until the host registers an SDK, and none at all when the API is not installed, in which case each
 * method returns at once. `account` labels only when the host opted in (`metricsAccountLabels`): one series
 * per account can be many.
 */
export class WebhookMetrics implements OnModuleDestroy {
  private readonly instruments: Instruments | undefined;
  private observer: BatchObservableCallback | undefined;

  constructor(
    private readonly meter: Meter | undefined,
    private readonly accountLabels = false,
  ) {
    this.instruments = meter && createInstruments(meter);
  }

  /** False when `@opentelemetry/api` is not installed: callers skip the work of describing what happened. */
  get enabled(): boolean {
    return this.instruments !== undefined;
  }

  /** One answer of a webhook route, refusals included. */
  requestAnswered(operation: WebhookOperation, statusCode: number): void {
    this.instruments?.requests.add(1, { operation, status_code: statusCode });
  }

  /** A run entered `status` (`queued`: accepted and charged; `running`: started; else finished). */
  runChanged(run: RunFacts, status: InvocationStatus, durationMs?: number): void {
    const m = this.instruments;
    if (!m) return;
    if (status === 'queued') {
      if (run.credits > 0) m.creditsCharged.add(run.credits, this.ofRun(run, {}));
    } else if (status === 'running') {
      if (run.startedAt) m.queueWait.record(Math.max(0, run.startedAt.getTime() - run.createdAt.getTime()) / 1000, this.ofRun(run, {}));
    } else {
      const attributes = this.ofRun(run, { status });
      m.runsFinished.add(1, attributes);
      if (durationMs !== undefined) m.runDuration.record(Math.max(0, durationMs) / 1000, attributes);
    }
  }

  /** One attempt of a callback delivery (or its abandonment) for `event`. */
  callbackAttempted(event: string, outcome: CallbackAttemptOutcome): void {
    this.instruments?.callbackDeliveries.add(1, { event, outcome });
  }

  /** Reads the process gauges from `counts` whenever a reader collects, until the module is destroyed. */
  observeProcess(counts: ProcessCounts): void {
    const m = this.instruments;
    if (!m || !this.meter) return;
    const [backlog, running, syncWaiters, eventStreams] = m.gauges;
    this.observer = (result) => {
      result.observe(backlog, counts.backlog());
      result.observe(running, counts.running());
      result.observe(syncWaiters, counts.syncWaiters());
      result.observe(eventStreams, counts.eventStreams());
    };
    this.meter.addBatchObservableCallback(this.observer, m.gauges);
  }

  onModuleDestroy(): void {
    if (this.observer && this.instruments) this.meter?.removeBatchObservableCallback(this.observer, this.instruments.gauges);
    this.observer = undefined;
  }

  private ofRun(run: RunFacts, attributes: Attributes): Attributes {
    attributes.bot = run.botId;
    if (this.accountLabels) attributes.account = run.accountId;
    return attributes;
  }
}

/** The module's `WebhookMetrics`, on the meter of the host's `@opentelemetry/api` when it is installed. */
export const webhookMetricsProvider: FactoryProvider<WebhookMetrics> = {
  provide: WebhookMetrics,
  inject: [WEBHOOK_TRIGGER_EXTRAS],
  useFactory: (extras: { metricsAccountLabels?: boolean }) =>
    new WebhookMetrics(otelApi?.metrics.getMeter(INSTRUMENTATION_SCOPE), extras.metricsAccountLabels === true),
};
