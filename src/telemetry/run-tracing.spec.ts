import { context, trace } from '@opentelemetry/api';
import { InvalidRequestError, DatabaseConnectionLostError } from '../errors/webhook-trigger.errors.js';
import type { DeliveryRecord, InvocationRecord, TriggerRecord } from '../persistence/records.js';
import { callerTrace, registerTracing, theSpan, type RegisteredTracing } from '../../test/helpers/tracing.js';
import { startRunSpan, traceDelivery, traceRequest } from './run-tracing.js';
import { TRACE_ATTRIBUTES as ATTR } from './trace-attributes.js';

const trigger: TriggerRecord = {
  id: 'trg_1',
  botId: 'echo',
  accountId: 'acct',
  name: 't',
  type: 'webhook',
  keys: [],
  createdAt: new Date(0),
};
const SERVER = 1;
const INTERNAL = 0;
const ERROR = 2;

describe('run tracing (the SDK registered)', () => {
  let tracing: RegisteredTracing;
  beforeEach(() => (tracing = registerTracing()));
  afterEach(() => tracing.unregister());

  it("continues the caller's traceparent in a SERVER span, and hands its own context to store with the run", async () => {
    const caller = callerTrace();
    const stored = await traceRequest('trigger', { traceparent: caller.traceparent }, trigger, async (span) => span.traceContext());
    const span = theSpan(tracing.spans(), 'webhook trigger');
    expect(span).toMatchObject({ kind: SERVER, traceId: caller.traceId, parentSpanId: caller.spanId });
    expect(JSON.parse(stored!)).toEqual({ traceparent: `00-${caller.traceId}-${span.spanId}-01` });
  });

  it("makes an INTERNAL child of the host's HTTP span when one is active, whatever the headers say", async () => {
    const host = trace.getTracer('host-http').startSpan('GET /webhooks');
    await context.with(trace.setSpan(context.active(), host), () =>
      traceRequest('status', { traceparent: callerTrace().traceparent }, trigger, async () => 'ok'),
    );
    host.end();
    const span = theSpan(tracing.spans(), 'webhook status');
    expect(span).toMatchObject({ kind: INTERNAL, traceId: host.spanContext().traceId, parentSpanId: host.spanContext().spanId });
  });

  it('ends with the error answer: a 4xx is an outcome, a 5xx an error named by its class only', async () => {
    await expect(traceRequest('trigger', {}, trigger, () => Promise.reject(new InvalidRequestError('bad {"secret":1}')))).rejects.toThrow();
    await expect(
      traceRequest('cancel', {}, trigger, () => Promise.reject(new DatabaseConnectionLostError(new Error('lost')))),
    ).rejects.toThrow();
    await expect(traceRequest('sync', {}, trigger, () => Promise.reject(new Error('boom with input')))).rejects.toThrow();
    const spans = tracing.spans();
    expect(theSpan(spans, 'webhook trigger')).toMatchObject({ attributes: { [ATTR.httpStatusCode]: 400 }, status: { code: 0 } });
    expect(theSpan(spans, 'webhook cancel')).toMatchObject({
      attributes: { [ATTR.httpStatusCode]: 503 },
      status: { code: ERROR, message: 'DatabaseConnectionLostError' },
    });
    expect(theSpan(spans, 'webhook sync')).toMatchObject({
      attributes: { [ATTR.httpStatusCode]: 500 },
      status: { code: ERROR, message: 'Error' },
    });
  });

  it('starts a run whose stored context cannot be read in a trace of its own, without a link', () => {
    const run = { id: 'inv_1', triggerId: 'trg_1', botId: 'echo', accountId: 'acct', credits: 1, attempts: 2, traceContext: 'not json' };
    startRunSpan(run as InvocationRecord).end('timed_out', { message: 'The bot did not finish within 5 ms', code: 'timeout' });
    const span = theSpan(tracing.spans(), 'webhook run echo');
    expect(span).toMatchObject({ parentSpanId: undefined, links: [], status: { code: ERROR, message: 'timeout' } });
    expect(span.attributes).toMatchObject({ [ATTR.runAttempt]: 2, [ATTR.runStatus]: 'timed_out', [ATTR.runErrorCode]: 'timeout' });
  });

  it("sends a delivery's traceparent in the run's trace and records how the attempt went", async () => {
    const caller = callerTrace();
    const delivery = { id: 'dlv_1', triggerId: 'trg_1', invocationId: 'inv_1', event: 'invocation.completed', attempts: 2 };
    const headers: Record<string, string> = { 'webhook-id': 'msg_1' };
    await traceDelivery(
      { ...delivery, traceContext: JSON.stringify({ traceparent: caller.traceparent }) } as DeliveryRecord,
      headers,
      async () => ({
        outcome: 'failed',
        status: 503,
      }),
    );
    const span = theSpan(tracing.spans(), 'webhook callback invocation.completed');
    expect(headers).toEqual({ 'webhook-id': 'msg_1', traceparent: `00-${caller.traceId}-${span.spanId}-01` });
    expect(span).toMatchObject({ parentSpanId: caller.spanId, status: { code: ERROR, message: 'failed' } });
    expect(span.attributes).toMatchObject({ [ATTR.deliveryAttempt]: 3, [ATTR.httpStatusCode]: 503, [ATTR.deliveryOutcome]: 'failed' });
  });
});
