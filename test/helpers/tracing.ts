import { context, propagation, trace, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { randomBytes } from 'node:crypto';

/**
 * A finished span as the trace suites compare them, the same shape whether it was recorded in this process
 * or written by a child process (test/fixtures/traced-worker.cjs writes these as JSON lines).
 */
export interface SpanRecord {
  name: string;
  /** SpanKind: 0 internal, 1 server, 2 client, 3 producer, 4 consumer. */
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  links: { traceId: string; spanId: string }[];
  attributes: Attributes;
  /** SpanStatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
}

export function spanRecordOf(span: ReadableSpan): SpanRecord {
  return {
    name: span.name,
    kind: span.kind,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    links: span.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
    attributes: span.attributes,
    status: { code: span.status.code, message: span.status.message },
  };
}

/** The OpenTelemetry SDK registered globally in this process, as a host registers it, with an in-memory exporter. */
export interface RegisteredTracing {
  /** The spans finished so far. */
  spans(): SpanRecord[];
  /** Takes the SDK away again: the API's no-op tracer, context manager and propagator answer from then on. */
  unregister(): Promise<void>;
}

/**
 * Registers a TracerProvider (SimpleSpanProcessor → InMemorySpanExporter), the AsyncLocalStorage context manager
 * and the W3C trace-context propagator globally; `unregister()` in the suite's afterAll.
 */
export function registerTracing(): RegisteredTracing {
  trace.disable();
  context.disable();
  propagation.disable();
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  let registered = true;
  return {
    spans: () => exporter.getFinishedSpans().map(spanRecordOf),
    async unregister() {
      if (!registered) return;
      registered = false;
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** A caller's own trace: its ids and the `traceparent` header it sends. */
export interface CallerTrace {
  traceId: string;
  spanId: string;
  traceparent: string;
}

export function callerTrace(): CallerTrace {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

/** The one span named `name`, failing with the names there are when it is missing or not alone. */
export function theSpan(spans: SpanRecord[], name: string): SpanRecord {
  const found = spans.filter((s) => s.name === name);
  if (found.length !== 1)
    throw new Error(`expected one span "${name}", found ${found.length} among: ${spans.map((s) => s.name).join(', ')}`);
  return found[0];
}
