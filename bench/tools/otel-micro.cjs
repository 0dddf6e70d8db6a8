// What the module's own telemetry costs per trigger and its run, with nothing else around it: the compiled
// library's traceRequest (a trigger request's span, its stored context), startRunSpan (the run's span, the
// bot inside it), and the metrics of one answer and one run's life (queued, running, succeeded), called in a
// loop of 100,000 on the OpenTelemetry SDK as the bench's preload registers it (contenders/otel-sdk.ts: 100 %
// sampled, batch processor into an exporter that drops, Prometheus reader, W3C propagator).
// Two more rows time the SDK alone, without the module, for the floor under the module's traces: the two spans
// of a trigger and its run started and ended bare (no attributes), then with the attributes the module sets on
// them (the same keys and values, 13 in all), and two histogram records: what any code reporting the same
// spans and histograms through this SDK pays, however it is written.
// Usage (after `npm run build`): node bench/tools/otel-micro.cjs   — one child process per setup, a table of µs.
const { execFileSync } = require('node:child_process');
const { join } = require('node:path');

const SETUPS = {
  'API only, no SDK': '',
  'SDK: traces and metrics': 'traces,metrics',
  'SDK: traces and metrics, AsyncLocalStorage context manager': 'traces,metrics,als',
  'SDK: traces only': 'traces',
  'SDK: metrics only': 'metrics',
  'SDK alone (no module): the two spans, bare': 'traces,floor-bare',
  'SDK alone (no module): the two spans with the same 13 attributes, two histogram records': 'traces,metrics,floor-attributes',
};

function table() {
  for (const [label, setup] of Object.entries(SETUPS)) {
    const us = execFileSync(process.execPath, [__filename, setup || 'none'], { encoding: 'utf8' }).trim();
    console.log(`${us.padStart(8)} µs  ${label}`);
  }
}

if (process.argv[2] === undefined) table();
else measure(process.argv[2]);

async function measure(setup) {
  const api = require('@opentelemetry/api');
  if (setup.includes('metrics')) {
    const { PrometheusExporter } = require('@opentelemetry/exporter-prometheus');
    const { MeterProvider } = require('@opentelemetry/sdk-metrics');
    api.metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new PrometheusExporter({ preventServerStart: true })] }));
  }
  if (setup.includes('als')) {
    const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
    api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  }
  if (setup.includes('traces')) {
    const { W3CTraceContextPropagator } = require('@opentelemetry/core');
    const { AlwaysOnSampler, BatchSpanProcessor, TracerProvider } = require('@opentelemetry/sdk-trace');
    const exporter = { export: (spans, done) => done({ code: 0 }), shutdown: () => Promise.resolve() };
    api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    api.trace.setGlobalTracerProvider(
      new TracerProvider({ sampler: new AlwaysOnSampler(), spanProcessors: [new BatchSpanProcessor({ exporter })] }),
    );
  }
  if (setup.includes('floor')) return floor(api, setup.includes('attributes'));
  const dist = join(__dirname, '..', '..', 'dist');
  const { traceRequest, startRunSpan } = require(join(dist, 'telemetry', 'run-tracing.js'));
  const { WebhookMetrics } = require(join(dist, 'telemetry', 'webhook-metrics.js'));
  const metrics = new WebhookMetrics(api.metrics.getMeter('nestjs-webhook-triggers'));
  const trigger = { id: 'trg_0123456789ab', botId: 'echo', accountId: 'bench' };
  const headers = { 'content-type': 'application/json', 'x-key': 'key' };

  async function triggerAndRun(i) {
    let traceContext = null;
    await traceRequest('trigger', headers, trigger, async (span) => {
      traceContext = span.traceContext();
      span.set({ 'webhook.invocation.id': `inv_${i}`, 'webhook.credits': 1, 'webhook.replayed': false });
    });
    metrics.requestAnswered('trigger', 202);
    const now = new Date();
    const run = {
      id: `inv_${i}`,
      triggerId: trigger.id,
      botId: 'echo',
      accountId: 'bench',
      credits: 1,
      attempts: 1,
      traceContext,
      createdAt: now,
      startedAt: now,
    };
    metrics.runChanged(run, 'queued');
    const span = startRunSpan(run);
    metrics.runChanged(run, 'running');
    await span.within(async () => undefined);
    span.end('succeeded', null);
    metrics.runChanged(run, 'succeeded', 3);
  }

  for (let i = 0; i < 20_000; i++) await triggerAndRun(i); // warm-up
  const n = 100_000;
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await triggerAndRun(i);
  console.log((Number(process.hrtime.bigint() - started) / 1e3 / n).toFixed(2));
}

/** The SDK's own cost for the spans and histograms the module reports per trigger and run (see the header). */
async function floor(api, attributes) {
  const tracer = api.trace.getTracer('floor');
  const meter = api.metrics.getMeter('floor');
  const queueWait = meter.createHistogram('floor.queue_wait', { unit: 's' });
  const runDuration = meter.createHistogram('floor.run_duration', { unit: 's' });
  const bot = { bot: 'echo' };
  const finished = { bot: 'echo', status: 'succeeded' };
  const ids = { 'webhook.trigger.id': 'trg_0123456789ab', 'webhook.bot.id': 'echo', 'webhook.account.id': 'bench' };
  const once = (i) => {
    const request = tracer.startSpan(
      'webhook trigger',
      { kind: api.SpanKind.SERVER, attributes: attributes ? ids : undefined },
      api.ROOT_CONTEXT,
    );
    if (attributes) request.setAttributes({ 'webhook.invocation.id': `inv_${i}`, 'webhook.credits': 1, 'http.response.status_code': 200 });
    request.end();
    const parent = api.trace.setSpan(api.ROOT_CONTEXT, request);
    // Written out (a spread adding properties takes Node 20's slow path, microseconds: spread-micro.cjs).
    const runAttributes = attributes
      ? {
          'webhook.trigger.id': 'trg_0123456789ab',
          'webhook.invocation.id': `inv_${i}`,
          'webhook.bot.id': 'echo',
          'webhook.account.id': 'bench',
          'webhook.credits': 1,
          'webhook.run.attempt': 1,
        }
      : undefined;
    const run = tracer.startSpan('webhook run echo', { kind: api.SpanKind.CONSUMER, attributes: runAttributes }, parent);
    if (attributes) {
      run.setAttribute('webhook.run.status', 'succeeded');
      queueWait.record(0.001, bot);
      runDuration.record(0.003, finished);
    }
    run.end();
  };
  // Awaiting each, as the module's loop does, so the batch processor exports as it goes instead of dropping.
  for (let i = 0; i < 20_000; i++) await once(i); // warm-up
  const n = 100_000;
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await once(i);
  console.log((Number(process.hrtime.bigint() - started) / 1e3 / n).toFixed(2));
}
