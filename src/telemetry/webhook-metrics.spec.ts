import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { INSTRUMENTATION_SCOPE, otelApi } from './otel-api.js';
import { WebhookMetrics } from './webhook-metrics.js';

class Reader extends MetricReader {
  protected override onForceFlush = () => Promise.resolve();
  protected override onShutdown = () => Promise.resolve();
}

const run = { botId: 'echo', accountId: 'acct', credits: 1, createdAt: new Date(0), startedAt: new Date(1000) };
const counts = { backlog: () => 1, running: () => 1, syncWaiters: () => 1, eventStreams: () => 1 };

/** Every method, as a run's life and a process's answers call them. */
function exercise(m: WebhookMetrics): void {
  m.observeProcess(counts);
  m.requestAnswered('trigger', 200);
  m.runChanged(run, 'queued');
  m.runChanged(run, 'running');
  m.runChanged(run, 'succeeded', 5);
  m.callbackAttempted('invocation.completed', 'delivered');
}

describe('WebhookMetrics without an SDK', () => {
  afterEach(() => metrics.disable());

  it("records on the API's no-op meter when no SDK is registered: nothing breaks, and an SDK registered later sees none of it", async () => {
    const m = new WebhookMetrics(otelApi!.metrics.getMeter(INSTRUMENTATION_SCOPE));
    expect(m.enabled).toBe(true);
    expect(() => exercise(m)).not.toThrow();
    m.onModuleDestroy();
    const reader = new Reader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    const { resourceMetrics } = await reader.collect();
    expect(resourceMetrics.scopeMetrics).toEqual([]);
  });

  it('does nothing at all when @opentelemetry/api is not installed (no meter)', () => {
    const m = new WebhookMetrics(undefined);
    expect(m.enabled).toBe(false);
    expect(() => exercise(m)).not.toThrow();
    expect(() => m.onModuleDestroy()).not.toThrow();
  });

  it('records on a registered SDK (the same calls, seen, counters cumulative), and stops counting with the module', async () => {
    const reader = new Reader();
    const m = new WebhookMetrics(new MeterProvider({ readers: [reader] }).getMeter(INSTRUMENTATION_SCOPE));
    exercise(m);
    m.requestAnswered('trigger', 200);
    m.requestAnswered('trigger', 429);
    const sums = async () => {
      const { resourceMetrics } = await reader.collect();
      const found = new Map<string, number>();
      for (const metric of resourceMetrics.scopeMetrics[0]?.metrics ?? [])
        for (const point of metric.dataPoints)
          if (typeof point.value === 'number') found.set(`${metric.descriptor.name} ${JSON.stringify(point.attributes)}`, point.value);
      return found;
    };
    const first = await sums();
    expect(first.get('webhook_trigger.requests {"operation":"trigger","status_code":200}')).toBe(2);
    expect(first.get('webhook_trigger.requests {"operation":"trigger","status_code":429}')).toBe(1);
    expect(first.get('webhook_trigger.runs_finished {"bot":"echo","status":"succeeded"}')).toBe(1);
    expect(first.get('webhook_trigger.credits_charged {"bot":"echo"}')).toBe(1);
    expect(first.get('webhook_trigger.callback_deliveries {"event":"invocation.completed","outcome":"delivered"}')).toBe(1);
    m.requestAnswered('trigger', 200);
    expect((await sums()).get('webhook_trigger.requests {"operation":"trigger","status_code":200}')).toBe(3);
    m.onModuleDestroy();
    m.requestAnswered('trigger', 200);
    expect((await sums()).get('webhook_trigger.requests {"operation":"trigger","status_code":200}')).toBe(3);
  });
});
