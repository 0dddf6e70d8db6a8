/**
 * One trace across processes (docs/observability.md, Traces): an API node in this Jest process (the SDK registered
 * with an in-memory exporter) and a BullMQ worker in a child process (test/fixtures/traced-worker.cjs, its own SDK,
 * its spans handed back as JSON lines in a file). The caller's traceparent reaches the trigger span here, travels
 * with the run (its row and its job) to the worker, whose run span, bot span and callback span join the same trace,
 * and the callback receiver gets that trace id.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebhookTriggersAdmin } from '../../src/index.js';
import { TRACE_ATTRIBUTES as ATTR } from '../../src/telemetry/trace-attributes.js';
import { TracedBot } from '../fixtures/traced-bot.js';
import { BullMqCluster, type ApiNode } from '../helpers/bullmq-cluster.js';
import { startCallbackReceiver, type CallbackReceiver } from '../helpers/callback-receiver.js';
import { request, startRun, until } from '../helpers/http.js';
import { serviceUrl } from '../helpers/services.js';
import { callerTrace, registerTracing, theSpan, type RegisteredTracing, type SpanRecord } from '../helpers/tracing.js';

jest.setTimeout(60_000);

const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');
const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');
const WORKER = join(__dirname, '../fixtures/traced-worker.cjs');
const INPUT_MARKER = 'input-marker-2b8f0d';

if (!redisUrl || !postgresUrl) {
  it.todo(
    'Traces across processes NOT RUN: set WEBHOOK_TEST_REDIS_URL=redis://127.0.0.1:6379 and WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test',
  );
} else {
  describe('traces with an API node here and a BullMQ worker in another process', () => {
    let tracing: RegisteredTracing;
    let cluster: BullMqCluster;
    let api: ApiNode;
    let admin: WebhookTriggersAdmin;
    let receiver: CallbackReceiver;
    let dir: string;
    let traceFile: string;
    let worker: ChildProcess;
    let workerOutput = '';

    /** The spans the worker process has written so far. */
    const workerSpans = (): SpanRecord[] =>
      existsSync(traceFile)
        ? readFileSync(traceFile, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as SpanRecord)
        : [];

    beforeAll(async () => {
      tracing = registerTracing();
      dir = mkdtempSync(join(tmpdir(), 'webhook-traces-'));
      traceFile = join(dir, 'worker-spans.jsonl');
      receiver = await startCallbackReceiver();
      cluster = await BullMqCluster.create(redisUrl, postgresUrl, {
        providers: [TracedBot],
        options: { callbackAllowedHosts: ['127.0.0.1'] },
      });
      api = await cluster.startApi(); // runs the migrations before the worker opens the database
      admin = api.app.get(WebhookTriggersAdmin);
      await admin.setCredits('acct', 100);
      worker = spawn(process.execPath, [WORKER], {
        env: {
          ...process.env,
          DATABASE_URL: cluster.dbUrl,
          REDIS_URL: redisUrl,
          REDIS_KEY_PREFIX: cluster.keyPrefix,
          TRACE_FILE: traceFile,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      worker.stdout!.on('data', (c: Buffer) => (workerOutput += c.toString()));
      worker.stderr!.on('data', (c: Buffer) => (workerOutput += c.toString()));
      await until(() => workerOutput.includes('worker ready') || worker.exitCode !== null, 30_000, 'the worker process');
      if (!workerOutput.includes('worker ready')) throw new Error(`The worker process did not start:\n${workerOutput}`);
    });
    afterAll(async () => {
      if (worker && worker.exitCode === null) {
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        worker.kill('SIGTERM');
        await exited;
      }
      await cluster?.close();
      await receiver?.close();
      await tracing?.unregister();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('keeps one trace id from the caller through the trigger, the worker run, the bot span and the callback', async () => {
      const created = await admin.createTrigger('traced', { name: 'traced across processes' });
      await admin.setCallback(created.id, { url: `${receiver.origin}/hooks/traced` });
      const trigger = { id: created.id, key: created.key, botId: 'traced', url: `${api.url}/webhooks/${created.id}/trigger` };
      const caller = callerTrace();
      const id = await startRun(trigger, { note: INPUT_MARKER }, { headers: { traceparent: caller.traceparent } });
      const sync = await request(`${trigger.url}/invocation/${id}/sync`, {
        headers: { 'x-key': trigger.key, traceparent: caller.traceparent },
      });
      expect(sync.status).toBe(200);
      // Run in the worker process, in the caller's trace.
      expect(sync.body.outputs).toEqual([
        { title: 'recording', message: 'true' },
        { title: 'trace', message: caller.traceId },
      ]);
      await until(() => receiver.received.some((c) => c.body.toString().includes(id)), 10_000, 'the callback');
      await until(
        () => workerSpans().some((s) => s.name === 'webhook callback invocation.completed'),
        10_000,
        "the worker's callback span",
      );

      // This process: the trigger request, a child of the caller's span.
      const here = tracing.spans().filter((s) => s.traceId === caller.traceId);
      const triggerSpan = theSpan(here, 'webhook trigger');
      expect(triggerSpan).toMatchObject({ parentSpanId: caller.spanId, attributes: expect.objectContaining({ [ATTR.invocationId]: id }) });
      expect(here.map((s) => s.name)).not.toContain('webhook run traced'); // an API node runs no bots

      // The worker process: the run under (and linked to) the trigger span, the bot's span under the run.
      const there = workerSpans();
      expect(there.every((s) => s.traceId === caller.traceId)).toBe(true);
      const run = theSpan(there, 'webhook run traced');
      expect(run).toMatchObject({
        kind: 4,
        parentSpanId: triggerSpan.spanId,
        links: [{ traceId: caller.traceId, spanId: triggerSpan.spanId }],
      });
      expect(run.attributes).toMatchObject({
        [ATTR.invocationId]: id,
        [ATTR.runStatus]: 'succeeded',
        [ATTR.runAttempt]: 1,
        [ATTR.credits]: 2,
      });
      expect(theSpan(there, 'my-bot step').parentSpanId).toBe(run.spanId);
      const callback = theSpan(there, 'webhook callback invocation.completed');
      expect(callback.attributes).toMatchObject({ [ATTR.deliveryOutcome]: 'delivered', [ATTR.httpStatusCode]: 200 });

      const delivered = receiver.received.find((c) => c.body.toString().includes(id))!;
      expect(delivered.headers.traceparent).toBe(`00-${caller.traceId}-${callback.spanId}-01`);
      expect(JSON.stringify([...here, ...there].map((s) => s.attributes))).not.toMatch(new RegExp(`${INPUT_MARKER}|${trigger.key}`));
    });
  });
}
