import { type FactoryProvider, type OnModuleDestroy } from '@nestjs/common';
import { WEBHOOK_TRIGGER_EXTRAS } from '../options/module.constants.js';
import type { InvocationRecord, InvocationStatus } from '../persistence/records.js';
import { INSTRUMENTATION_SCOPE, otelApi } from './otel-api.js';

/** The webhook routes, as the `operation` label of `webhook_trigger_requests_total` names them. */
export type WebhookOperation = 'trigger' | 'sync' | 'status' | 'cancel' | 'events';

/** How one callback attempt went, the `outcome` label of `webhook_trigger_callback_deliveries_total`. */
export type CallbackAttemptOutcome = 'delivered' | 'retrying' | 'failed' | 'gone' | 'abandoned';

/** What the process gauges read, each time a reader collects. */
export interface ProcessCounts {
  /** Runs dispatched here and not started (`BotRunner.backlog()`), and those waiting here to be dispatched again. */
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
 * The part of `@opentelemetry/api`'s `Meter` the metrics use, written out here instead of imported: the main
 * entry's declarations reach this file, and a host that has not installed the optional peer compiles them too
 * (with `skipLibCheck: false`, an import of the API's types fails there, TS2307). The provider hands in the API's
 * own meter, so the compiler checks that it fits.
 */
export interface MetricsMeter {
  createHistogram(name: string, options?: InstrumentOptions): HistogramInstrument;
  createObservableCounter(name: string, options?: InstrumentOptions): ObservableInstrument;
  createObservableGauge(name: string, options?: InstrumentOptions): ObservableInstrument;
  addBatchObservableCallback(callback: BatchCallback, instruments: ObservableInstrument[]): void;
  removeBatchObservableCallback(callback: BatchCallback, instruments: ObservableInstrument[]): void;
}

/** A series' labels (the API's `Attributes`, narrowed to the values the module gives). */
type MetricAttributes = Record<string, string | number>;

interface InstrumentOptions {
  description?: string;
  unit?: string;
  advice?: { explicitBucketBoundaries?: number[] };
}

interface HistogramInstrument {
  record(value: number, attributes?: MetricAttributes): void;
}

/** An observable counter or gauge: only ever handed back to the meter, or to a batch's result. */
type ObservableInstrument = object;

/** What a batch callback reports its observations to. */
interface BatchResult {
  observe(instrument: ObservableInstrument, value: number, attributes?: MetricAttributes): void;
}

type BatchCallback = (result: BatchResult) => void;

/**
 * Upper bounds (seconds) of the run duration and queue wait histograms: from a quick bot (50 ms) to the
 * default time limit (15 min), with the seconds-long runs in between spread over several buckets.
 */
export const RUN_SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900];

/**
 * The metrics' OpenTelemetry names. The Prometheus exporter turns the dots into underscores and adds
 * `_total` to counters (monotonic sums), never a unit suffix, so each is scraped as the name in its comment.
 */
const METRIC_NAMES = {
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

/**
 * A counter kept in the process and reported through an observable counter each time a reader collects:
 * per event a Map increment under a key the caller builds, instead of an SDK record (which hashes the
 * attributes on every call). The values are cumulative, as the counter's would be; a series appears once
 * it was first counted.
 */
class CountedSeries {
  private readonly series = new Map<string, { attributes: MetricAttributes; value: number }>();

  constructor(readonly instrument: ObservableInstrument) {}

  /** Adds `value` to the series named `key`, made with `attributes()` the first time; answers the series' attributes. */
  add(key: string, value: number, attributes: () => MetricAttributes): MetricAttributes {
    const series = this.series.get(key);
    if (series) {
      series.value += value;
      return series.attributes;
    }
    const made = attributes();
    this.series.set(key, { attributes: made, value });
    return made;
  }

  observe(result: BatchResult): void {
    for (const { attributes, value } of this.series.values()) result.observe(this.instrument, value, attributes);
  }
}

interface Instruments {
  requests: CountedSeries;
  runsFinished: CountedSeries;
  runDuration: HistogramInstrument;
  queueWait: HistogramInstrument;
  creditsCharged: CountedSeries;
  callbackDeliveries: CountedSeries;
  gauges: ObservableInstrument[];
}

function createInstruments(meter: MetricsMeter): Instruments {
  const seconds = { unit: 's', advice: { explicitBucketBoundaries: RUN_SECONDS_BUCKETS } };
  const gauge = (name: string, description: string, unit = '{run}') => meter.createObservableGauge(name, { description, unit });
  const counter = (name: string, description: string, unit?: string) =>
    new CountedSeries(meter.createObservableCounter(name, { description, ...(unit ? { unit } : {}) }));
  return {
    requests: counter(METRIC_NAMES.requests, 'Answers of the webhook routes', '{request}'),
    runsFinished: counter(METRIC_NAMES.runsFinished, 'Runs that ended, by final status', '{run}'),
    runDuration: meter.createHistogram(METRIC_NAMES.runDuration, { description: 'Runs from started to finished', ...seconds }),
    queueWait: meter.createHistogram(METRIC_NAMES.queueWait, { description: 'Runs from accepted to started', ...seconds }),
    creditsCharged: counter(METRIC_NAMES.creditsCharged, 'Credits debited for accepted runs'),
    callbackDeliveries: counter(METRIC_NAMES.callbackDeliveries, 'Callback delivery attempts, by outcome', '{attempt}'),
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
  private counted: { callback: BatchCallback; instruments: ObservableInstrument[] } | undefined;
  private observer: BatchCallback | undefined;
  /** Each run's attributes (bot, and account when opted in), made once per series. */
  private readonly runAttributes = new Map<string, MetricAttributes>();

  constructor(
    private readonly meter: MetricsMeter | undefined,
    private readonly accountLabels = false,
  ) {
    const m = meter && createInstruments(meter);
    this.instruments = m;
    if (!meter || !m) return;
    const counters = [m.requests, m.runsFinished, m.creditsCharged, m.callbackDeliveries];
    const callback: BatchCallback = (result) => {
      for (const counter of counters) counter.observe(result);
    };
    this.counted = { callback, instruments: counters.map((counter) => counter.instrument) };
    meter.addBatchObservableCallback(callback, this.counted.instruments);
  }

  /** False when `@opentelemetry/api` is not installed: callers skip the work of describing what happened. */
  get enabled(): boolean {
    return this.instruments !== undefined;
  }

  /** One answer of a webhook route, refusals included. */
  requestAnswered(operation: WebhookOperation, statusCode: number): void {
    this.instruments?.requests.add(`${operation} ${statusCode}`, 1, () => ({ operation, status_code: statusCode }));
  }

  /** A run entered `status` (`queued`: accepted and charged; `running`: started; else finished). */
  runChanged(run: RunFacts, status: InvocationStatus, durationMs?: number): void {
    const m = this.instruments;
    if (!m) return;
    if (status === 'queued') {
      if (run.credits > 0) m.creditsCharged.add(this.runKey(run), run.credits, () => this.ofRun(run));
    } else if (status === 'running') {
      if (run.startedAt) m.queueWait.record(Math.max(0, run.startedAt.getTime() - run.createdAt.getTime()) / 1000, this.ofRun(run));
    } else {
      // The finished-runs series holds the attribute set, made once; the duration histogram uses the same.
      const attributes = m.runsFinished.add(`${this.runKey(run)}\0${status}`, 1, () => ({ ...this.ofRun(run), status }));
      if (durationMs !== undefined) m.runDuration.record(Math.max(0, durationMs) / 1000, attributes);
    }
  }

  /** One attempt of a callback delivery (or its abandonment) for `event`. */
  callbackAttempted(event: string, outcome: CallbackAttemptOutcome): void {
    this.instruments?.callbackDeliveries.add(`${event} ${outcome}`, 1, () => ({ event, outcome }));
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

  /** Stops counting: the gauges' and counters' callbacks leave the host's meter (an SDK keeps the last values it was handed). */
  onModuleDestroy(): void {
    const m = this.instruments;
    if (!m || !this.meter) return;
    if (this.observer) this.meter.removeBatchObservableCallback(this.observer, m.gauges);
    if (this.counted) this.meter.removeBatchObservableCallback(this.counted.callback, this.counted.instruments);
    this.observer = undefined;
    this.counted = undefined;
  }

  /** The run's series key: its bot, and its account when account labels are on (a bot id never holds a NUL). */
  private runKey(run: RunFacts): string {
    return this.accountLabels ? `${run.botId}\0${run.accountId}` : run.botId;
  }

  /** The run's attributes, one object per series (read, never changed, by the SDK). */
  private ofRun(run: RunFacts): MetricAttributes {
    const key = this.runKey(run);
    let attributes = this.runAttributes.get(key);
    if (!attributes) {
      attributes = this.accountLabels ? { bot: run.botId, account: run.accountId } : { bot: run.botId };
      this.runAttributes.set(key, attributes);
    }
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
