// Preloaded (`node --require`) into a contender for the OpenTelemetry cost phase, before the app exists: a host
// that registers the OpenTelemetry SDK as the sample app does (sample-app/src/telemetry.ts), with every span
// sampled and exported, and its metrics collected as a Prometheus scrape would.
//
// - Traces: a TracerProvider sampling 100 % (AlwaysOn; BENCH_OTEL_SAMPLING=0.1 samples 10 % of new traces)
//   with a BatchSpanProcessor into an exporter that counts the spans and drops them (what an OTLP exporter
//   costs on the wire is the host's, not the library's).
// - Metrics: a MeterProvider read by the Prometheus exporter's reader without its HTTP server, collected and
//   serialized every OTEL_SCRAPE_MS, as a scrape of `GET /metrics` would.
// - The W3C trace context propagator and the AsyncLocalStorage context manager (none when
//   BENCH_OTEL_CONTEXT_MANAGER is `none`: the `sdk-no-context` variant, preloaded by otel-sdk-no-context.ts).
//
// The counts are published for `serveRpc`'s `telemetry` operation (bench/shared.ts), so the orchestrator can
// check that spans and metrics really flowed during the measurement.
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { OTEL_SDK_REPORT, type OtelSdkReport } from '../shared.js';

const OTEL_SCRAPE_MS = 5_000;

/** AlwaysOn (every span, the SDK's default); BENCH_OTEL_SAMPLING=<ratio> samples that share of new traces (parentbased_traceidratio). */
function sampler() {
  const ratio = process.env.BENCH_OTEL_SAMPLING;
  if (ratio === undefined || ratio === '' || Number(ratio) >= 1) return new AlwaysOnSampler();
  return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(Number(ratio)) });
}

const report: OtelSdkReport = { spansExported: 0, scrapes: 0, scrapeBytes: 0 };

class DroppingSpanExporter implements SpanExporter {
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    report.spansExported += spans.length;
    done({ code: ExportResultCode.SUCCESS });
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const reader = new PrometheusExporter({ preventServerStart: true });
const serializer = new PrometheusSerializer();
async function scrape(): Promise<void> {
  const { resourceMetrics } = await reader.collect();
  report.scrapes++;
  report.scrapeBytes = serializer.serialize(resourceMetrics).length;
}
setInterval(() => void scrape(), OTEL_SCRAPE_MS).unref();

metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
if (process.env.BENCH_OTEL_CONTEXT_MANAGER !== 'none') context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const tracerProvider = new TracerProvider({
  sampler: sampler(),
  spanProcessors: [new BatchSpanProcessor({ exporter: new DroppingSpanExporter() })],
});
trace.setGlobalTracerProvider(tracerProvider);

// Asked after a measurement: the spans still batched are exported and one more scrape is made first (a short
// measurement may end before the batch is full and before the scrape interval), as the next export and
// Prometheus's next scrape would, so the counts say whether spans and metrics were recorded at all.
(globalThis as Record<symbol, unknown>)[OTEL_SDK_REPORT] = async (): Promise<OtelSdkReport> => {
  await tracerProvider.forceFlush();
  await scrape();
  return { ...report };
};
