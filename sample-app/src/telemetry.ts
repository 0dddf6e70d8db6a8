/**
 * The sample app's OpenTelemetry SDK, loaded FIRST by main.ts (and so by worker.ts): the library reports through
 * `@opentelemetry/api`, which is a no-op until a host registers an SDK, and takes its meter when its module is
 * created, so the providers must be registered before any app module exists.
 *
 * - Metrics: a MeterProvider read by the Prometheus exporter's reader, without the exporter's own HTTP server
 *   (`preventServerStart`): `GET /metrics` (MetricsController) serves what it collects, on the app's port.
 * - Traces: a TracerProvider with the W3C trace context propagator and an AsyncLocalStorage context, so the
 *   library's spans (and `traceparent` in and out) exist; add a span processor with an exporter (OTLP) to ship them.
 */
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { TracerProvider } from '@opentelemetry/sdk-trace';

/** The reader `GET /metrics` collects from. */
export const prometheusReader = new PrometheusExporter({ preventServerStart: true });
const serializer = new PrometheusSerializer();

/** The Prometheus text exposition format, version 0.0.4, as scrapers ask for it. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Everything the app's meters hold now, in the Prometheus text format. */
export async function prometheusText(): Promise<string> {
  const { resourceMetrics } = await prometheusReader.collect();
  return serializer.serialize(resourceMetrics);
}

metrics.setGlobalMeterProvider(new MeterProvider({ readers: [prometheusReader] }));
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(new TracerProvider());
