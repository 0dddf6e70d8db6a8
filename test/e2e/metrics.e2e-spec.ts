/**
 * Metrics through the OpenTelemetry metrics API, read by an in-memory reader on a real SDK MeterProvider: every
 * answer of the webhook routes is counted by operation and status (refusals of the guard included), runs finished
 * by status with their durations and queue waits, the process gauges while a bot holds the only slot, credits
 * charged, and callback attempts by outcome; `account` labels only with the `metricsAccountLabels` extra.
 */
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, DataPointType, MeterProvider, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import { openRunStream } from '../helpers/event-stream.js';
import { cancelRun, expectError, getStatus, rawRequest, send, startRun, syncInvocation, triggerBot, until } from '../helpers/http.js';
import { startCallbackReceiver, type CallbackReceiver } from '../helpers/callback-receiver.js';
import {
  type AdapterFactory,
  createTrigger,
  describeOnEveryAdapter,
  type WebhookTestApp,
  startWebhookApp,
  UNTHROTTLED,
} from '../helpers/webhook-app.js';
import type { WebhookTriggerModuleExtras } from '../../src/webhook-trigger.extras.js';
import { UnreachableQueueRunner } from '../fixtures/unreachable-runner.js';

/** A reader that collects when asked. */
class CollectingReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }

  /** The metrics of the module's scope, by name. */
  async read(): Promise<Map<string, MetricData>> {
    const { resourceMetrics } = await this.collect();
    const scope = resourceMetrics.scopeMetrics.find((s) => s.scope.name === 'nestjs-webhook-triggers');
    return new Map((scope?.metrics ?? []).map((m) => [m.descriptor.name, m]));
  }
}

type Labels = Record<string, string | number>;
/** The value (sum or gauge) or histogram count of the point whose attributes include `labels`, summed. */
function valueOf(all: Map<string, MetricData>, name: string, labels: Labels = {}): number {
  const metric = all.get(name);
  if (!metric) return 0;
  let total = 0;
  for (const point of metric.dataPoints) {
    if (!Object.entries(labels).every(([k, v]) => point.attributes[k] === v)) continue;
    const value = point.value as number | { count: number };
    total += metric.dataPointType === DataPointType.HISTOGRAM ? (value as { count: number }).count : (value as number);
  }
  return total;
}
const attributeKeys = (all: Map<string, MetricData>, name: string) =>
  new Set(all.get(name)?.dataPoints.flatMap((p) => Object.keys(p.attributes)));

/** An app whose module took its meter from a MeterProvider read by the returned reader (registered only while it starts). */
async function startMeteredApp(makeAdapter: AdapterFactory, extras: WebhookTriggerModuleExtras = {}) {
  const reader = new CollectingReader();
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  try {
    const app = await startWebhookApp(makeAdapter, {
      options: {
        keySecret: 'metrics-test-secret-0123456789',
        rateLimits: { perTrigger: { limit: 6, ttlMs: 60_000 }, perAccount: UNTHROTTLED!.perAccount },
        maxConcurrentRuns: 1,
        callbackAllowedHosts: ['127.0.0.1'],
        callbackRetryScheduleMs: [0, 50],
        shutdownGraceMs: 0,
      },
      extras,
    });
    await app.admin.setCredits('acct', 1000);
    return { app, reader };
  } finally {
    metrics.disable(); // the module keeps the meter it took; the next app registers its own provider
  }
}

describeOnEveryAdapter('metrics', ({ makeAdapter }) => {
  let t: WebhookTestApp;
  let reader: CollectingReader;
  let good: CallbackReceiver;
  let failing: CallbackReceiver;
  beforeAll(async () => {
    ({ app: t, reader } = await startMeteredApp(makeAdapter));
    good = await startCallbackReceiver();
    failing = await startCallbackReceiver();
    failing.respond((res) => res.writeHead(500).end());
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([good.close(), failing.close()]);
  });

  it('every metric moves as runs do: requests by operation and status, runs, durations, waits, gauges, credits, callbacks', async () => {
    const echo = await createTrigger(t, 'echo');
    const fail = await createTrigger(t, 'fail');
    const slow = await createTrigger(t, 'slow');
    const limited = await createTrigger(t, 'echo', 'limited');
    await t.admin.setCallback(echo.id, { url: `${good.origin}/ok` });
    await t.admin.setCallback(fail.id, { url: `${failing.origin}/broken` });

    // Two runs that succeed, one that fails, each waited for.
    const ran = [await startRun(echo, { a: 'x' }), await startRun(echo, { b: 'y' })];
    for (const id of ran) expect((await syncInvocation(echo, id)).status).toBe(200);
    const failed = await startRun(fail, {});
    expect((await syncInvocation(fail, failed)).status).toBe(200);
    expect((await getStatus(fail, failed)).status).toBe(200);
    // A wrong key (401), then a trigger's limit (6 a minute) spent on unknown runs (404) until 429.
    expectError(await triggerBot(echo, {}, { key: 'whk_wrong' }), 401);
    for (let i = 0; i < 6; i++) expectError(await getStatus(limited, 'inv_AAAAAAAAAAAAAAAAAAAAAA'), 404);
    expectError(await getStatus(limited, 'inv_AAAAAAAAAAAAAAAAAAAAAA'), 429);

    // A slow run holds the only slot; a second waits behind it; a sync and an event stream wait on the first.
    const held = await startRun(slow, { ms: 60_000 });
    const queued = await startRun(slow, { ms: 10 });
    const sync = syncInvocation(slow, held);
    const stream = await openRunStream(`${slow.url}/invocation/${held}/events`, { 'x-key': slow.key });
    const gauges = async () => {
      const m = await reader.read();
      return ['backlog_runs', 'running_runs', 'sync_waiters', 'event_streams'].map((n) => valueOf(m, `webhook_trigger.${n}`));
    };
    await until(async () => (await gauges()).join() === '1,1,1,1', 5_000, 'backlog, running, sync waiter and stream at 1');

    expect((await cancelRun(slow, queued)).status).toBe(200);
    expect((await cancelRun(slow, held)).status).toBe(200);
    expect((await sync).status).toBe(200);
    await stream.ended;
    await until(async () => (await gauges()).join() === '0,0,0,0', 5_000, 'every gauge back to 0');
    // The good callback delivered twice; the broken one retried once, then failed.
    await until(
      async () => valueOf(await reader.read(), 'webhook_trigger.callback_deliveries', { outcome: 'failed' }) === 1,
      5_000,
      'failed',
    );

    const m = await reader.read();
    const requests = (operation: string, status_code: number) => valueOf(m, 'webhook_trigger.requests', { operation, status_code });
    expect({
      trigger200: requests('trigger', 200),
      trigger401: requests('trigger', 401),
      sync200: requests('sync', 200),
      status200: requests('status', 200),
      status404: requests('status', 404),
      status429: requests('status', 429),
      cancel200: requests('cancel', 200),
      events200: requests('events', 200),
    }).toEqual({ trigger200: 5, trigger401: 1, sync200: 4, status200: 1, status404: 6, status429: 1, cancel200: 2, events200: 1 });

    expect(valueOf(m, 'webhook_trigger.runs_finished', { bot: 'echo', status: 'succeeded' })).toBe(2);
    expect(valueOf(m, 'webhook_trigger.runs_finished', { bot: 'fail', status: 'failed' })).toBe(1);
    expect(valueOf(m, 'webhook_trigger.runs_finished', { bot: 'slow', status: 'cancelled' })).toBe(2);
    // Durations for the runs that started (the queued one was cancelled before it did); waits for every start.
    expect(valueOf(m, 'webhook_trigger.run_duration_seconds', { bot: 'echo', status: 'succeeded' })).toBe(2);
    expect(valueOf(m, 'webhook_trigger.run_duration_seconds', { bot: 'slow', status: 'cancelled' })).toBe(1);
    expect(valueOf(m, 'webhook_trigger.queue_wait_seconds', { bot: 'echo' })).toBe(2);
    expect(valueOf(m, 'webhook_trigger.queue_wait_seconds')).toBe(4);
    // One credit per accepted run (the fixture bots cost the default 1), refunds not subtracted.
    expect(valueOf(m, 'webhook_trigger.credits_charged')).toBe(5);
    expect(valueOf(m, 'webhook_trigger.callback_deliveries', { event: 'invocation.completed', outcome: 'delivered' })).toBe(2);
    expect(valueOf(m, 'webhook_trigger.callback_deliveries', { event: 'invocation.completed', outcome: 'retrying' })).toBe(1);
    // Cardinality: no account label unless the host opts in.
    for (const name of ['webhook_trigger.runs_finished', 'webhook_trigger.credits_charged', 'webhook_trigger.queue_wait_seconds']) {
      expect(attributeKeys(m, name).has('account')).toBe(false);
    }
  });

  it("counts the answers given at the adapter's front under the path's operation: a wrong method's 405, an undecodable id's 404, a HEAD as its GET", async () => {
    const echo = await createTrigger(t, 'echo', 'front');
    const status = `${echo.url}/invocation/inv_AAAAAAAAAAAAAAAAAAAAAA`;
    const counted = async () => {
      const m = await reader.read();
      const requests = (operation: string, status_code: number) => valueOf(m, 'webhook_trigger.requests', { operation, status_code });
      return {
        trigger405: requests('trigger', 405),
        sync405: requests('sync', 405),
        trigger404: requests('trigger', 404),
        status404: requests('status', 404),
      };
    };
    const before = await counted();

    expectError(await send('GET', echo.url, { headers: { 'x-key': echo.key } }), 405);
    expectError(await send('POST', `${status}/sync`, { headers: { 'x-key': echo.key } }), 405);
    expectError(await send('GET', `${t.baseUrl}/webhooks/%zz/trigger`), 404);
    expect((await rawRequest(status, { method: 'HEAD', headers: { 'x-key': echo.key } })).status).toBe(404);

    const after = await counted();
    expect({
      trigger405: after.trigger405 - before.trigger405,
      sync405: after.sync405 - before.sync405,
      trigger404: after.trigger404 - before.trigger404,
      status404: after.status404 - before.status404,
    }).toEqual({ trigger405: 1, sync405: 1, trigger404: 1, status404: 1 });
  });
});

describeOnEveryAdapter('metrics with metricsAccountLabels', ({ makeAdapter }) => {
  it('labels the run metrics with the account', async () => {
    const { app: t, reader } = await startMeteredApp(makeAdapter, { metricsAccountLabels: true });
    try {
      const echo = await createTrigger(t, 'echo');
      const id = await startRun(echo, { a: 'x' });
      expect((await syncInvocation(echo, id)).status).toBe(200);
      const m = await reader.read();
      expect(valueOf(m, 'webhook_trigger.runs_finished', { bot: 'echo', status: 'succeeded', account: 'acct' })).toBe(1);
      expect(valueOf(m, 'webhook_trigger.credits_charged', { account: 'acct' })).toBe(1);
      expect(valueOf(m, 'webhook_trigger.queue_wait_seconds', { account: 'acct' })).toBe(1);
      expect(valueOf(m, 'webhook_trigger.run_duration_seconds', { account: 'acct' })).toBe(1);
    } finally {
      await t.close();
    }
  });
});

describeOnEveryAdapter('metrics with a runner whose dispatch throws', ({ makeAdapter }) => {
  it('counts the runs waiting to be dispatched again in the backlog gauge, as maxQueuedRuns counts them', async () => {
    const { app: t, reader } = await startMeteredApp(makeAdapter, { runner: UnreachableQueueRunner });
    try {
      const echo = await createTrigger(t, 'echo');
      await startRun(echo, { i: 1 });
      await startRun(echo, { i: 2 });
      expect(valueOf(await reader.read(), 'webhook_trigger.backlog_runs')).toBe(2);
    } finally {
      await t.close();
    }
  });
});
