import type { Attributes, Context, Span, Tracer, TracerProvider } from '@opentelemetry/api';
import { httpStatusOf } from '../errors/error-status.js';
import type { DeliveryRecord, InvocationError, InvocationRecord, InvocationStatus, TriggerRecord } from '../persistence/records.js';
import { INSTRUMENTATION_SCOPE, otelApi, type OtelApi } from './otel-api.js';
import { SPAN_NAMES, TRACE_ATTRIBUTES as ATTR } from './trace-attributes.js';

// The module's spans (docs/observability.md, Traces), through the host's `@opentelemetry/api` only. Without it
// installed every function here hands over at once; installed without an SDK, the API's no-op tracer answers.
// The trace context travels explicitly (a string stored with the run and its deliveries), never through an
// active context the host may not have a context manager for.

/** Request headers as Node gives them (names in lower case). */
export type RequestHeaders = Record<string, string | string[] | undefined>;

/** The trigger API's requests that get a span of their own. */
export type TracedOperation = 'trigger' | 'sync' | 'status' | 'cancel';

/** A request's span, as the handler sees it. */
export interface RequestSpan {
  /** This span's context as the host's propagator writes it (JSON), to store with a run; null when nothing is traced. */
  traceContext(): string | null;
  /** Adds attributes learnt while handling (the invocation, the credits charged). */
  set(attributes: Attributes): void;
  /** The span's context, for the spans made under it (the sync wait); undefined when nothing is traced. */
  readonly context?: Context;
}

const UNTRACED: RequestSpan = { traceContext: () => null, set: () => undefined };

let cached: { provider: TracerProvider; tracer: Tracer } | undefined;
/**
 * The module's tracer, asked for once per global provider (a span of its own costs no lookup): a proxy
 * tracer while no SDK is registered follows one registered later; `trace.disable()` makes a new provider.
 */
function tracerOf(api: OtelApi): Tracer {
  const provider = api.trace.getTracerProvider();
  if (cached?.provider !== provider) cached = { provider, tracer: provider.getTracer(INSTRUMENTATION_SCOPE) };
  return cached.tracer;
}

/** The propagator's fields for `context` as JSON, or null when it writes none (no propagator, or no valid span). */
function serialize(api: OtelApi, context: Context): string | null {
  const carrier: Record<string, string> = {};
  api.propagation.inject(context, carrier);
  return Object.keys(carrier).length > 0 ? JSON.stringify(carrier) : null;
}

/** The context stored with a run (`serialize`), or the root context when there is none or it cannot be read. */
function deserialize(api: OtelApi, stored: string | null | undefined): Context {
  if (!stored) return api.ROOT_CONTEXT;
  try {
    return api.propagation.extract(api.ROOT_CONTEXT, JSON.parse(stored) as Record<string, string>);
  } catch {
    return api.ROOT_CONTEXT;
  }
}

/** An error span status naming only the error's class: its message may quote inputs. */
function thrownStatus(api: OtelApi, error: unknown): { code: number; message: string } {
  return { code: api.SpanStatusCode.ERROR, message: (error as Error | null)?.constructor?.name ?? 'Error' };
}

/** Ends `span` as failed by `error` (by its class only), and throws it on. */
function endThrown(api: OtelApi, span: Span, error: unknown): never {
  span.setStatus(thrownStatus(api, error));
  span.end();
  throw error;
}

function triggerAttributes(trigger: TriggerRecord): Attributes {
  return { [ATTR.triggerId]: trigger.id, [ATTR.botId]: trigger.botId, [ATTR.accountId]: trigger.accountId };
}

/**
 * Handles one request of the trigger API inside its span: a SERVER span that continues the caller's
 * `traceparent`/`tracestate` (read by the host's propagator), or, when the host's HTTP instrumentation already
 * made an active span, an INTERNAL span under it. Ends with the answer's status code (an error's, from the one
 * table); 5xx mark the span as an error, with the error's class name only (a message may quote a request).
 */
export function traceRequest<T>(
  operation: TracedOperation,
  headers: RequestHeaders,
  trigger: TriggerRecord,
  handle: (span: RequestSpan) => Promise<T>,
): Promise<T> {
  const api = otelApi;
  if (!api) return handle(UNTRACED);
  const active = api.context.active();
  const hostSpan = api.trace.getSpan(active);
  const underHost = hostSpan !== undefined && api.trace.isSpanContextValid(hostSpan.spanContext());
  const parent = underHost ? active : api.propagation.extract(api.ROOT_CONTEXT, headers);
  const span = tracerOf(api).startSpan(
    SPAN_NAMES[operation],
    { kind: underHost ? api.SpanKind.INTERNAL : api.SpanKind.SERVER, attributes: triggerAttributes(trigger) },
    parent,
  );
  const context = api.trace.setSpan(parent, span);
  // What the handler learns is set on the span once, with the answer's status code, as it ends.
  const learnt: Attributes = {};
  const requestSpan: RequestSpan = {
    traceContext: () => serialize(api, context),
    set: (attributes) => Object.assign(learnt, attributes),
    context,
  };
  return api.context
    .with(context, () => handle(requestSpan))
    .then(
      (answer) => {
        learnt[ATTR.httpStatusCode] = 200;
        span.setAttributes(learnt);
        span.end();
        return answer;
      },
      (error: unknown) => {
        const status = httpStatusOf(error) ?? 500;
        learnt[ATTR.httpStatusCode] = status;
        span.setAttributes(learnt);
        if (status >= 500) span.setStatus(thrownStatus(api, error));
        span.end();
        throw error;
      },
    );
}

/** What a sync wait answers: how it ended, and the run when there is one. */
interface WaitOutcome {
  kind: string;
  invocation?: { status: InvocationStatus };
}

/** A sync request's wait for its run, in an INTERNAL span under the request's, with how it ended. */
export function traceSyncWait<T extends WaitOutcome>(request: RequestSpan, wait: () => Promise<T>): Promise<T> {
  const api = otelApi;
  if (!api || !request.context) return wait();
  const span = tracerOf(api).startSpan(SPAN_NAMES.syncWait, { kind: api.SpanKind.INTERNAL }, request.context);
  return api.context.with(api.trace.setSpan(request.context, span), wait).then(
    (result) => {
      span.setAttribute(ATTR.syncOutcome, result.kind);
      if (result.invocation) span.setAttribute(ATTR.runStatus, result.invocation.status);
      span.end();
      return result;
    },
    (error: unknown) => endThrown(api, span, error),
  );
}

/** A run's span, from its start in this process to its stored outcome. */
export interface RunSpan {
  /** Calls `fn` (the bot's `main()`) with the run's span active, so a bot's own spans nest under it. */
  within<T>(fn: () => T): T;
  /** Ends the span with the run's outcome; an error is recorded by its code (the stop reason), never the bot's message. */
  end(status: InvocationStatus, error: InvocationError | null): void;
}

const UNTRACED_RUN: RunSpan = { within: (fn) => fn(), end: () => undefined };

/**
 * The run's CONSUMER span, `webhook run <botId>`: a child of the trigger request's context stored with the run
 * (so one trace goes from the caller to the callback receiver, whichever process runs it) and linked to it,
 * as OpenTelemetry's messaging conventions ask of a consumer.
 */
export function startRunSpan(run: InvocationRecord): RunSpan {
  const api = otelApi;
  if (!api) return UNTRACED_RUN;
  const parent = deserialize(api, run.traceContext);
  const request = api.trace.getSpanContext(parent);
  const span: Span = tracerOf(api).startSpan(
    `${SPAN_NAMES.run} ${run.botId}`,
    {
      kind: api.SpanKind.CONSUMER,
      attributes: {
        [ATTR.triggerId]: run.triggerId,
        [ATTR.invocationId]: run.id,
        [ATTR.botId]: run.botId,
        [ATTR.accountId]: run.accountId,
        [ATTR.credits]: run.credits,
        [ATTR.runAttempt]: run.attempts ?? 1,
      },
      links: request && api.trace.isSpanContextValid(request) ? [{ context: request }] : [],
    },
    parent,
  );
  const context = api.trace.setSpan(parent, span);
  return {
    within: (fn) => api.context.with(context, fn),
    end: (status, error) => {
      span.setAttribute(ATTR.runStatus, status);
      if (error) {
        const reason = error.code ?? status;
        span.setAttribute(ATTR.runErrorCode, reason);
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: reason });
      }
      span.end();
    },
  };
}

/** How a delivery attempt went, as far as its span tells. */
interface AttemptOutcome {
  outcome: string;
  status?: number;
}

/**
 * One callback delivery attempt in a CLIENT span, in the run's trace (the context stored with the delivery):
 * `headers` get the span's `traceparent` (and whatever else the host's propagator writes) before `send`, so the
 * receiver continues the same trace.
 */
export function traceDelivery<T extends AttemptOutcome>(
  delivery: DeliveryRecord,
  headers: Record<string, string>,
  send: () => Promise<T>,
): Promise<T> {
  const api = otelApi;
  if (!api) return send();
  const parent = deserialize(api, delivery.traceContext);
  const span = tracerOf(api).startSpan(
    `${SPAN_NAMES.callback} ${delivery.event}`,
    {
      kind: api.SpanKind.CLIENT,
      attributes: {
        [ATTR.callbackEvent]: delivery.event,
        [ATTR.deliveryId]: delivery.id,
        [ATTR.deliveryAttempt]: delivery.attempts + 1,
        [ATTR.invocationId]: delivery.invocationId,
        [ATTR.triggerId]: delivery.triggerId,
      },
    },
    parent,
  );
  const context = api.trace.setSpan(parent, span);
  api.propagation.inject(context, headers);
  return api.context.with(context, send).then(
    (result) => {
      span.setAttribute(ATTR.deliveryOutcome, result.outcome);
      if (result.status !== undefined) span.setAttribute(ATTR.httpStatusCode, result.status);
      if (result.outcome !== 'delivered') span.setStatus({ code: api.SpanStatusCode.ERROR, message: result.outcome });
      span.end();
      return result;
    },
    (error: unknown) => endThrown(api, span, error),
  );
}

/**
 * Calls `fn` in the trace context a BullMQ job carries (the trigger request's), so what a worker's own
 * instrumentation records while it takes the job (Redis, the database) joins the caller's trace.
 */
export function withStoredContext<T>(stored: string | null | undefined, fn: () => T): T {
  const api = otelApi;
  if (!api || !stored) return fn();
  return api.context.with(deserialize(api, stored), fn);
}
