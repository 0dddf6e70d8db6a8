/**
 * Traces (docs/observability.md, Traces) with the OpenTelemetry SDK registered in this process as a host registers
 * it (TracerProvider → SimpleSpanProcessor → InMemorySpanExporter, the AsyncLocalStorage context manager, the W3C
 * propagator): a caller's `traceparent` is continued by the trigger request, the run (and a bot's own span inside
 * it), the sync wait and the callback, whose real local receiver gets the same trace id; the spans carry ids,
 * credits and outcomes, never a key or an input. Then, the SDK taken away, the module works and traces nothing.
 */
import { request, startRun, triggerBot, until, cancelRun, getStatus } from '../helpers/http.js';
import { startCallbackReceiver, type CallbackReceiver } from '../helpers/callback-receiver.js';
import { callerTrace, registerTracing, theSpan, type RegisteredTracing, type SpanRecord } from '../helpers/tracing.js';
import { createTrigger, describeApp, describeOnEveryAdapterAndDatabase, ROOMY_APP, type TestTrigger } from '../helpers/webhook-app.js';
import { TracedBot } from '../fixtures/traced-bot.js';
import { TRACE_ATTRIBUTES as ATTR } from '../../src/telemetry/trace-attributes.js';

/** Appears in bot inputs; must never show up in a span. */
const INPUT_MARKER = 'input-marker-7c41e9';
const SERVER = 1;
const CLIENT = 2;
const CONSUMER = 4;
const INTERNAL = 0;
const ERROR = 2;

describeOnEveryAdapterAndDatabase('traces', ({ makeAdapter, database }) => {
  let tracing: RegisteredTracing;
  let receiver: CallbackReceiver;
  const described = describeApp(
    { makeAdapter, database },
    { ...ROOMY_APP, options: { ...ROOMY_APP.options, callbackAllowedHosts: ['127.0.0.1'] } },
    { providers: [TracedBot] },
  );

  const app = () => described.app;

  beforeAll(async () => {
    tracing = registerTracing();
    receiver = await startCallbackReceiver();
  });
  afterAll(async () => {
    await tracing.unregister();
    await receiver.close();
  });

  /** The spans of one trace, once `name` (ended last of those the test waits for) is among them. */
  async function traceOf(traceId: string, ...names: string[]): Promise<SpanRecord[]> {
    const inTrace = () => tracing.spans().filter((s) => s.traceId === traceId);
    await until(() => names.every((n) => inTrace().some((s) => s.name === n)), 5_000, `spans ${names.join(', ')}`);
    return inTrace();
  }

  /** No span of these says a key or an input. */
  function expectNothingSecret(spans: SpanRecord[], trigger: TestTrigger): void {
    const said = JSON.stringify(spans.map((s) => [s.attributes, s.status]));
    expect(said).not.toContain(INPUT_MARKER);
    expect(said).not.toContain(trigger.key);
  }

  it('continues the caller trace through the trigger, the run, the bot span, the sync wait and the callback', async () => {
    const trigger = await createTrigger(app(), 'traced');
    await app().admin.setCallback(trigger.id, { url: `${receiver.origin}/hooks/traced` });
    const caller = callerTrace();
    const headers = { traceparent: caller.traceparent, tracestate: 'caller=1' };
    const id = await startRun(trigger, { note: INPUT_MARKER }, { headers });
    const sync = await request(`${trigger.url}/invocation/${id}/sync`, { headers: { 'x-key': trigger.key, ...headers } });
    expect(sync.status).toBe(200);
    // The bot's own span recorded, in the caller's trace.
    expect(sync.body.outputs).toEqual([
      { title: 'recording', message: 'true' },
      { title: 'trace', message: caller.traceId },
    ]);
    await until(() => receiver.received.some((c) => c.body.toString().includes(id)), 5_000, 'the callback');
    const spans = await traceOf(caller.traceId, 'webhook callback invocation.completed', 'webhook run traced', 'webhook sync');

    const triggerSpan = theSpan(spans, 'webhook trigger');
    expect(triggerSpan).toMatchObject({ kind: SERVER, parentSpanId: caller.spanId });
    expect(triggerSpan.attributes).toEqual({
      [ATTR.triggerId]: trigger.id,
      [ATTR.botId]: 'traced',
      [ATTR.accountId]: 'acct',
      [ATTR.invocationId]: id,
      [ATTR.credits]: 2,
      [ATTR.replayed]: false,
      [ATTR.httpStatusCode]: 200,
    });

    // The run: a consumer span under the trigger request's, and linked to it.
    const run = theSpan(spans, 'webhook run traced');
    expect(run).toMatchObject({
      kind: CONSUMER,
      parentSpanId: triggerSpan.spanId,
      links: [{ traceId: caller.traceId, spanId: triggerSpan.spanId }],
    });
    expect(run.attributes).toEqual({
      [ATTR.triggerId]: trigger.id,
      [ATTR.invocationId]: id,
      [ATTR.botId]: 'traced',
      [ATTR.accountId]: 'acct',
      [ATTR.credits]: 2,
      [ATTR.runAttempt]: 1,
      [ATTR.runStatus]: 'succeeded',
    });
    expect(run.status.code).not.toBe(ERROR);
    expect(theSpan(spans, 'my-bot step').parentSpanId).toBe(run.spanId);

    const syncSpan = theSpan(spans, 'webhook sync');
    expect(syncSpan).toMatchObject({ kind: SERVER, parentSpanId: caller.spanId });
    expect(syncSpan.attributes[ATTR.httpStatusCode]).toBe(200);
    const wait = theSpan(spans, 'webhook sync wait');
    expect(wait).toMatchObject({ kind: INTERNAL, parentSpanId: syncSpan.spanId });
    expect(wait.attributes).toEqual({ [ATTR.syncOutcome]: 'finished', [ATTR.runStatus]: 'succeeded' });

    // The receiver is called in the same trace, by the delivery's client span, with the caller's tracestate.
    const callback = theSpan(spans, 'webhook callback invocation.completed');
    expect(callback).toMatchObject({ kind: CLIENT, parentSpanId: triggerSpan.spanId });
    expect(callback.attributes).toEqual({
      [ATTR.callbackEvent]: 'invocation.completed',
      [ATTR.deliveryId]: expect.stringMatching(/^dlv_/),
      [ATTR.deliveryAttempt]: 1,
      [ATTR.invocationId]: id,
      [ATTR.triggerId]: trigger.id,
      [ATTR.deliveryOutcome]: 'delivered',
      [ATTR.httpStatusCode]: 200,
    });
    const delivered = receiver.received.find((c) => c.body.toString().includes(id))!;
    expect(delivered.headers.traceparent).toBe(`00-${caller.traceId}-${callback.spanId}-01`);
    expect(delivered.headers.tracestate).toBe('caller=1');
    expectNothingSecret(spans, trigger);
  });

  it('records a failed run as an error by its stop reason, never the bot message, and a 408 sync wait as a timeout', async () => {
    const failing = await createTrigger(app(), 'fail');
    const caller = callerTrace();
    const failed = await startRun(failing, { message: INPUT_MARKER }, { headers: { traceparent: caller.traceparent } });
    const failedRun = theSpan(await traceOf(caller.traceId, 'webhook run fail'), 'webhook run fail');
    expect(failedRun.attributes).toMatchObject({ [ATTR.invocationId]: failed, [ATTR.runStatus]: 'failed' });
    expect(failedRun.status).toEqual({ code: ERROR, message: 'failed' });

    // A run cancelled while it sleeps: the cancel request's span, and the run's ended by the reason.
    const slow = await createTrigger(app(), 'slow');
    const other = callerTrace();
    const sleeping = await startRun(slow, { ms: 10_000, note: INPUT_MARKER }, { headers: { traceparent: other.traceparent } });
    const waited = await request(`${slow.url}/invocation/${sleeping}/sync?timeout=1`, {
      headers: { 'x-key': slow.key, traceparent: other.traceparent },
    });
    expect(waited.status).toBe(408);
    expect((await getStatus(slow, sleeping, undefined, { traceparent: other.traceparent })).status).toBe(200);
    expect((await cancelRun(slow, sleeping, undefined, { headers: { traceparent: other.traceparent } })).status).toBe(200);
    const spans = await traceOf(other.traceId, 'webhook run slow', 'webhook cancel', 'webhook sync wait');
    expect(theSpan(spans, 'webhook sync wait').attributes).toEqual({ [ATTR.syncOutcome]: 'timeout', [ATTR.runStatus]: 'running' });
    // A 408 is an answer, not a server error.
    const syncSpan = theSpan(spans, 'webhook sync');
    expect(syncSpan.attributes[ATTR.httpStatusCode]).toBe(408);
    expect(syncSpan.status.code).not.toBe(ERROR);
    expect(theSpan(spans, 'webhook status').attributes).toMatchObject({ [ATTR.runStatus]: 'running', [ATTR.httpStatusCode]: 200 });
    expect(theSpan(spans, 'webhook cancel').attributes).toMatchObject({ [ATTR.runStatus]: 'cancelled', [ATTR.httpStatusCode]: 200 });
    const cancelledRun = theSpan(spans, 'webhook run slow');
    expect(cancelledRun.attributes).toMatchObject({ [ATTR.runStatus]: 'cancelled', [ATTR.runErrorCode]: 'cancelled' });
    expect(cancelledRun.status).toEqual({ code: ERROR, message: 'cancelled' });
    expectNothingSecret([failedRun, ...spans], failing);
    expectNothingSecret(spans, slow);
  });

  it('starts a trace at the trigger when the caller sends none, and marks a refusal by its status code', async () => {
    const trigger = await createTrigger(app(), 'traced');
    const before = new Set(tracing.spans().map((s) => s.spanId));
    const res = await triggerBot(trigger, { a: 1 }, { headers: { 'idempotency-key': 'k-1' } });
    expect(res.status).toBe(200);
    const repeat = await triggerBot(trigger, { a: 1 }, { headers: { 'idempotency-key': 'k-1' } });
    expect(repeat.body).toEqual(res.body);
    expect((await triggerBot(trigger, { a: 1 }, { headers: { 'idempotency-key': 'k-1' }, raw: '{"a":2}' })).status).toBe(422);
    const fresh = () => tracing.spans().filter((s) => s.name === 'webhook trigger' && !before.has(s.spanId));
    await until(() => fresh().length === 3, 5_000, 'three trigger spans');
    const [first, replayed, refused] = fresh();
    expect(first.parentSpanId).toBeUndefined();
    expect(first.attributes).toMatchObject({ [ATTR.credits]: 2, [ATTR.replayed]: false });
    expect(replayed.attributes).toMatchObject({ [ATTR.invocationId]: res.body.invocation.id, [ATTR.credits]: 0, [ATTR.replayed]: true });
    expect(refused.attributes).toMatchObject({ [ATTR.httpStatusCode]: 422 });
    expect(refused.attributes[ATTR.invocationId]).toBeUndefined();
    expect(refused.status.code).not.toBe(ERROR);
    await until(() => tracing.spans().some((s) => s.name === 'webhook run traced' && s.traceId === first.traceId), 5_000, 'its run');
  });

  it('without an SDK registered, triggers, runs and calls back as before and traces nothing', async () => {
    await tracing.unregister();
    const trigger = await createTrigger(app(), 'traced');
    await app().admin.setCallback(trigger.id, { url: `${receiver.origin}/hooks/untraced` });
    const caller = callerTrace();
    const id = await startRun(trigger, {}, { headers: { traceparent: caller.traceparent } });
    const sync = await request(`${trigger.url}/invocation/${id}/sync`, { headers: { 'x-key': trigger.key } });
    expect(sync.status).toBe(200);
    // The bot's own span does not record, and no trace reached it.
    expect(sync.body.outputs).toEqual([
      { title: 'recording', message: 'false' },
      { title: 'trace', message: '0'.repeat(32) },
    ]);
    await until(() => receiver.received.some((c) => c.body.toString().includes(id)), 5_000, 'the callback');
    const delivered = receiver.received.find((c) => c.body.toString().includes(id))!;
    expect(delivered.headers.traceparent).toBeUndefined();
  });
});
