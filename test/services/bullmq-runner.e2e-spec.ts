import type { INestApplication, INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { Client } from 'pg';
import { Queue, WaitingError, Worker } from 'bullmq';
import { InvocationExecutor } from '../../src/runs/invocation.executor.js';
import { ShutdownState } from '../../src/lifecycle/shutdown.state.js';
import { newInvocationId } from '../../src/keys/ids.js';
import { BullMqBotRunner, RedisClusterBus, RedisRateLimitStorage, WEBHOOK_RUN_QUEUE } from '../../src/redis/index.js';
import {
  BotRunner,
  InvocationRepository,
  WebhookTriggerModule,
  WebhookTriggersAdmin,
  type TriggerWithKey,
  type WebhookTriggerModuleOptions,
  WebhookBot,
  WebhookBotHost,
  type BotInputs,
  type BotOutput,
} from '../../src/index.js';
import { EchoBot, EmitBot } from '../fixtures/bots.js';
import { openRunStream } from '../helpers/event-stream.js';
import { AbortableBot, botLog } from '../fixtures/lifecycle-bots.js';
import { request, sleep, until } from '../helpers/http.js';
import { createScratchDatabase, deleteRedisKeys, serviceUrl } from '../helpers/services.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/** Echoes its inputs; safe to repeat, so a run whose worker died runs again. */
@WebhookBot({ id: 'retry-echo', accountId: 'acct', retryInterrupted: true })
class RetryEchoBot extends WebhookBotHost {
  async main(inputs: BotInputs): Promise<BotOutput[]> {
    return Object.entries(inputs).map(([title, message]) => ({ title, message: String(message) }));
  }
}

const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');
const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

if (!redisUrl || !postgresUrl) {
  it.todo(
    'BullMQ runner suite NOT RUN: set WEBHOOK_TEST_REDIS_URL=redis://127.0.0.1:6379 and WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test',
  );
} else {
  describe('BullMqBotRunner: API nodes and workers on one PostgreSQL database and one Redis', () => {
    let db: { url: string; drop: () => Promise<void> };
    let pg: Client;
    /** Fresh per run, so the queue, channel and limits of this suite are its own. */
    const keyPrefix = `webhook-test-${randomBytes(6).toString('hex')}:`;
    const closers: Array<() => Promise<void>> = [];

    const moduleFor = (options: WebhookTriggerModuleOptions) =>
      Test.createTestingModule({
        imports: [
          WebhookTriggerModule.forRoot({
            database: { type: 'postgres', url: db.url },
            redis: { url: redisUrl, keyPrefix },
            runLeaseMs: 1500,
            shutdownGraceMs: 0,
            rateLimits: { perTrigger: { limit: 10_000, ttlMs: 1000 }, perAccount: { limit: 10_000, ttlMs: 60_000 } },
            ...options,
            runner: BullMqBotRunner,
            clusterBus: RedisClusterBus,
            rateLimitStorage: RedisRateLimitStorage,
          }),
        ],
        providers: [EchoBot, AbortableBot, RetryEchoBot, EmitBot],
      }).compile();

    /** An HTTP node. */
    const startApi = async (options: WebhookTriggerModuleOptions = {}): Promise<{ app: INestApplication; url: string }> => {
      const app = (await moduleFor({ role: 'api', ...options })).createNestApplication({ logger: false });
      await app.listen(0, '127.0.0.1');
      let closed = false;
      const close = async () => {
        if (!closed) await app.close();
        closed = true;
      };
      closers.push(close);
      return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1') };
    };

    /** A worker: an application context, no HTTP server, as `npm run start:worker` starts it. */
    /** The executor owner of every worker started so far. */
    const workerOwners: string[] = [];
    const startWorker = async (
      options: WebhookTriggerModuleOptions = {},
    ): Promise<{ ctx: INestApplicationContext; close: () => Promise<void> }> => {
      const moduleRef = await moduleFor({ role: 'worker', ...options });
      moduleRef.useLogger(false);
      const ctx = await moduleRef.init();
      let closed = false;
      const close = async () => {
        if (!closed) await ctx.close();
        closed = true;
      };
      closers.push(close);
      workerOwners.push(ctx.get(InvocationExecutor).owner);
      return { ctx, close };
    };

    let api: { app: INestApplication; url: string };
    let admin: WebhookTriggersAdmin;
    let echo: TriggerWithKey;
    let abortable: TriggerWithKey;

    const trigger = (t: TriggerWithKey, inputs: unknown = {}, base = api.url) =>
      request(`${base}/webhooks/${t.id}/trigger`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-key': t.key! },
        body: JSON.stringify(inputs),
      });
    const sync = (t: TriggerWithKey, id: string, base = api.url, query = '') =>
      request(`${base}/webhooks/${t.id}/trigger/invocation/${id}/sync${query}`, { headers: { 'x-key': t.key! } });
    const row = async (id: string) =>
      (
        await pg.query<{ status: string; owner: string | null; error: string | null }>(
          'SELECT status, owner, error FROM webhook_invocations WHERE id = $1',
          [id],
        )
      ).rows[0];
    const credits = async () => (await admin.getCredits('acct'))!.credits;

    beforeAll(async () => {
      db = await createScratchDatabase(postgresUrl);
      api = await startApi();
      pg = new Client({ connectionString: db.url });
      await pg.connect();
      admin = api.app.get(WebhookTriggersAdmin);
      await admin.setCredits('acct', 1000);
      echo = await admin.createTrigger('echo', { name: 'echo' });
      abortable = await admin.createTrigger('abortable', { name: 'abortable' });
    });

    afterAll(async () => {
      for (const close of closers.reverse()) await close().catch(() => undefined);
      await pg?.end();
      await db?.drop();
      // The queue's own keys (id counter, meta, events stream) stay after its jobs are gone: remove them.
      await deleteRedisKeys(redisUrl, keyPrefix);
    });

    it('an API-only node never runs a bot: the run waits queued until a worker starts, then the sync on the API node answers', async () => {
      const res = await trigger(echo, { hello: 'queue' });
      expect(res.status).toBe(200);
      const id = res.body.invocation.id as string;
      // The 200 came once the job was in Redis; no worker of any node consumes the queue, the API node's included.
      const queue = new Queue(WEBHOOK_RUN_QUEUE, { connection: { url: redisUrl }, prefix: keyPrefix.replace(/:$/, '') });
      expect(await queue.getWorkersCount()).toBe(0);
      expect((await row(id)).status).toBe('queued');
      // The job is a pointer to the row: its data is the run's account (for fair share), the inputs never reach Redis.
      const redis = new Redis(redisUrl);
      const job = await redis.hgetall(`${keyPrefix}runs:${id}`);
      redis.disconnect();
      expect(job.data).toBe('"acct"');
      expect(Number(job.priority)).toBe(1); // the account's first pending run
      expect(JSON.stringify(job)).not.toContain('queue"');
      const waiting = sync(echo, id);
      const worker = await startWorker();
      expect(await queue.getWorkersCount()).toBe(1); // what the count above would have seen
      await queue.close();
      const answer = await waiting;
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ success: true, outputs: [{ title: 'hello', message: 'queue' }] });
      expect((await row(id)).owner).toBe(worker.ctx.get(InvocationExecutor).owner);
    });

    it("a run's event stream on the API node follows the run on a worker: status, each output as emitted, done; woken by the bus, not polling", async () => {
      const worker = await startWorker();
      const emit = await admin.createTrigger('emit', { name: 'emit' });
      const repository = api.app.get(InvocationRepository);
      const findById = jest.spyOn(repository, 'findById');
      try {
        const res = await trigger(emit, { n: 3, ms: 600 });
        const id = res.body.invocation.id as string;
        const stream = await openRunStream(`${api.url}/webhooks/${emit.id}/trigger/invocation/${id}/events`, { 'x-key': emit.key });
        expect(stream.status).toBe(200);
        const arrived: Record<number, number> = {};
        const watcher = setInterval(() => {
          for (const e of stream.events) arrived[e.id] ??= performance.now();
        }, 5);
        await stream.ended;
        clearInterval(watcher);
        for (const e of stream.events) arrived[e.id] ??= performance.now();
        const done = (await sync(emit, id)).body;
        const outputs = [1, 2, 3].map((i) => ({ title: `step ${i}`, message: String(i) }));
        expect(stream.events.map((e) => [e.id, e.event, e.data])).toEqual([
          [1, 'status', { status: 'queued' }],
          [2, 'status', { status: 'running' }],
          ...outputs.map((o, i) => [3 + i, 'output', o]),
          [6, 'output', { title: 'returned', message: '3' }],
          [7, 'status', { status: 'succeeded' }],
          [8, 'done', done],
        ]);
        // Each output reached the API node as the worker emitted it (600 ms apart), not all at the end.
        expect(arrived[4] - arrived[3]).toBeGreaterThan(300);
        expect(arrived[8] - arrived[3]).toBeGreaterThan(900);
        // On a worker (earlier tests' workers may still be open and take the job), never on the API node.
        expect(workerOwners).toContain((await row(id)).owner);
        // About two seconds of waiting cost a handful of reads (one per change, the first read, the settle
        // reads): a poll every 100 ms would be 20 or more.
        expect(findById.mock.calls.filter(([calledWith]) => calledWith === id).length).toBeLessThanOrEqual(12);
      } finally {
        findById.mockRestore();
        await worker.close();
      }
    });

    it('a repeated dispatch of a finished run is a no-op: no second run, no second charge', async () => {
      const before = await credits();
      const res = await trigger(abortable, { ms: 10 });
      const id = res.body.invocation.id as string;
      expect((await sync(abortable, id)).body.success).toBe(true);
      const runsBefore = botLog.started.filter((s) => s.invocationId === id).length;
      const runner = api.app.get(BotRunner);
      await runner.dispatch({ id, accountId: 'acct' });
      await runner.dispatch({ id, accountId: 'acct' });
      // Both dispatches are in Redis; a worker took their job and ended it (removed on completion).
      const redis = new Redis(redisUrl);
      await until(async () => (await redis.exists(`${keyPrefix}runs:${id}`)) === 0, 5000, 'the repeated job to end');
      redis.disconnect();
      expect(botLog.started.filter((s) => s.invocationId === id).length).toBe(runsBefore);
      expect(runsBefore).toBe(1);
      expect(await credits()).toBe(before - 1);
      expect((await row(id)).status).toBe('succeeded');
    });

    it('cancel on the API node reaches the worker running the bot: its signal fires, the run is stored cancelled, no refund', async () => {
      const before = await credits();
      const res = await trigger(abortable, { ms: 30_000 });
      const id = res.body.invocation.id as string;
      await until(async () => (await row(id)).status === 'running', 5000);
      const waiting = sync(abortable, id);
      const cancel = await request(`${api.url}/webhooks/${abortable.id}/trigger/invocation/${id}/cancel`, {
        method: 'POST',
        headers: { 'x-key': abortable.key! },
      });
      expect(cancel.status).toBe(200);
      expect(cancel.body.invocation.status).toBe('cancelled');
      await until(async () => botLog.signals.some((s) => s.invocationId === id), 2000);
      const signal = botLog.signals.find((s) => s.invocationId === id)!;
      expect(signal.aborted).toBe(true);
      expect((signal.reason as Error).message).toBe('The run was cancelled');
      const answer = await waiting;
      expect(answer.body.success).toBe(false);
      expect((await row(id)).status).toBe('cancelled');
      expect(await credits()).toBe(before - 1);
    });

    it('graceful shutdown of a worker: its run in flight finishes, the jobs it had not started go to another worker', async () => {
      // Only the worker below consumes; the one from the first test is closed first.
      for (const close of closers.slice(1)) await close();
      const a = await startWorker({ maxConcurrentRuns: 1, shutdownGraceMs: 5000 });
      const first = (await trigger(abortable, { ms: 600 })).body.invocation.id as string;
      await until(async () => (await row(first)).status === 'running', 5000);
      const second = (await trigger(abortable, { ms: 10 })).body.invocation.id as string;
      // a's one slot is busy: it never takes the second (its owner is b, below)
      expect((await row(second)).status).toBe('queued');
      const closing = a.close();
      const b = await startWorker();
      await closing;
      expect((await row(first)).status).toBe('succeeded'); // finished within a's grace
      expect((await row(first)).owner).toBe(a.ctx.get(InvocationExecutor).owner);
      const answer = await sync(abortable, second);
      expect(answer.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '10' }] });
      expect((await row(second)).owner).toBe(b.ctx.get(InvocationExecutor).owner);
    });

    it('a slow worker is not taken for a dead one: a run of 4 × runLeaseMs (1.5 s) finishes once, on its first worker, with a second worker watching', async () => {
      for (const close of closers.slice(1)) await close(); // only the two below consume
      // The worker running it has one slot, busy with this run: were its BullMQ lock not renewed
      // (`skipLockRenewal`), the stalled check would hand the job to the second worker, which would settle
      // the run as interrupted under the first one. So this fails for that mutation, every time.
      const w1 = await startWorker({ maxConcurrentRuns: 1 });
      const id = (await trigger(abortable, { ms: 6000 })).body.invocation.id as string;
      await until(async () => (await row(id)).status === 'running', 3_000, 'the run to start on the first worker');
      expect((await row(id)).owner).toBe(w1.ctx.get(InvocationExecutor).owner);
      const w2 = await startWorker();
      const answer = await sync(abortable, id, api.url, '?timeout=20');
      expect(answer.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '6000' }] });
      expect(botLog.started.filter((s) => s.invocationId === id)).toHaveLength(1); // never started again
      expect(await row(id)).toMatchObject({ status: 'succeeded', owner: w1.ctx.get(InvocationExecutor).owner });
      await w1.close();
      await w2.close();
    }, 30_000);

    it('a job that reaches a worker after its shutdown began goes back to the queue at once and runs on another worker', async () => {
      for (const close of closers.slice(1)) await close();
      const stopping = await startWorker();
      stopping.ctx.get(ShutdownState).begin(); // what SIGTERM does first; its BullMQ worker stops fetching
      const id = (await trigger(echo, { handed: 'back' })).body.invocation.id as string;
      // The race this covers: BullMQ handed the job out just before the worker stopped fetching. Fetch it
      // with a plain BullMQ worker's token and give it to the stopping worker's processor.
      const prefix = keyPrefix.replace(/:$/, '');
      const fetcher = new Worker(WEBHOOK_RUN_QUEUE, null, {
        connection: { host: '127.0.0.1', port: Number(new URL(redisUrl).port || 6379) },
        prefix,
        autorun: false,
      });
      const queue = new Queue(WEBHOOK_RUN_QUEUE, {
        connection: { host: '127.0.0.1', port: Number(new URL(redisUrl).port || 6379) },
        prefix,
      });
      try {
        const token = 'test-token';
        const job = await fetcher.getNextJob(token);
        expect(job?.id).toBe(id);
        const processJob = stopping.ctx
          .get<BotRunner, { process(j: unknown, t: string): Promise<void> }>(BotRunner)
          .process.bind(stopping.ctx.get(BotRunner));
        await expect(processJob(job, token)).rejects.toBeInstanceOf(WaitingError);
        expect(await queue.getJobState(id)).toBe('prioritized'); // back in line, with its fair-share priority
        expect((await row(id)).status).toBe('queued'); // not claimed, not charged again
      } finally {
        await fetcher.close();
        await queue.close();
      }
      await stopping.close();
      const other = await startWorker();
      const answer = await sync(echo, id, api.url, '?timeout=10');
      expect(answer.body).toEqual({ success: true, outputs: [{ title: 'handed', message: 'back' }] });
      expect((await row(id)).owner).toBe(other.ctx.get(InvocationExecutor).owner);
    });

    it.each([
      [
        'a default bot',
        'abortable',
        {
          success: false,
          status: 'failed',
          outputs: [],
          error: { message: 'The run was interrupted: the application stopped before it finished', code: 'interrupted' },
        },
      ],
      ['a retryInterrupted bot', 'retry-echo', { success: true, outputs: [{ title: 'again', message: 'yes' }] }],
    ])(
      'BullMQ lock lost (a dead worker) with the run lease still fresh: the stalled job is settled for %s',
      async (_label, botId, expected) => {
        for (const close of closers.slice(1)) await close();
        const t = await admin.createTrigger(botId, { name: `stalled ${botId}` });
        const id = (await trigger(t, botId === 'retry-echo' ? { again: 'yes' } : { ms: 30_000 })).body.invocation.id as string;
        // A worker that took the job and died: its lock (500 ms) is never renewed, and its run row says
        // `running` under its name with a lease far in the future, so only BullMQ can tell it is gone.
        const connection = { host: '127.0.0.1', port: Number(new URL(redisUrl).port || 6379) };
        const dead = new Worker(WEBHOOK_RUN_QUEUE, null, {
          connection,
          prefix: keyPrefix.replace(/:$/, ''),
          autorun: false,
          lockDuration: 500,
        });
        const job = await dead.getNextJob('dead-worker-token');
        expect(job?.id).toBe(id);
        await dead.close(true);
        await pg.query(
          `UPDATE webhook_invocations SET status = 'running', owner = 'dead-host:1:00000000', started_at = $2, lease_expires_at = $3 WHERE id = $1`,
          [id, Date.now(), Date.now() + 3_600_000],
        );
        const live = await startWorker(); // its stalled check (every runLeaseMs = 1.5 s) finds the lost lock
        const answer = await sync(t, id, api.url, '?timeout=15');
        expect(answer.body).toEqual(expected);
        const stored = await row(id);
        if (botId === 'retry-echo') expect(stored.owner).toBe(live.ctx.get(InvocationExecutor).owner);
        else expect(stored.status).toBe('failed');
      },
    );

    it('Redis unreachable when a trigger arrives: stored, charged and answered 200; dispatched once Redis is back', async () => {
      const proxy = new TcpProxy('127.0.0.1', Number(new URL(redisUrl).port || 6379));
      await proxy.open();
      const cut = await startApi({ redis: { url: proxy.url('redis'), keyPrefix } });
      const before = await credits();
      await proxy.cut();
      await sleep(100);
      const res = await trigger(echo, { during: 'outage' }, cut.url);
      expect(res.status).toBe(200);
      const id = res.body.invocation.id as string;
      expect((await row(id)).status).toBe('queued');
      expect(await credits()).toBe(before - 1);
      // The 200 came once the enqueue had failed: the job is not in Redis (read directly), the row waits queued.
      const redis = new Redis(redisUrl);
      expect(await redis.exists(`${keyPrefix}runs:${id}`)).toBe(0);
      redis.disconnect();
      expect((await row(id)).status).toBe('queued'); // never reached the queue
      await proxy.open();
      const answer = await sync(echo, id, cut.url, '?timeout=20');
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ success: true, outputs: [{ title: 'during', message: 'outage' }] });
      expect(await credits()).toBe(before - 1);
      await proxy.cut();
    });

    it('a run stored queued but never enqueued (its API node died between commit and enqueue) is dispatched by a worker sweep', async () => {
      const id = newInvocationId();
      await api.app.get(InvocationRepository).insert({
        id,
        triggerId: echo.id,
        botId: 'echo',
        accountId: 'acct',
        inputs: { orphan: 'yes' },
        credits: 1,
        idempotencyKey: null,
        requestHash: null,
        createdAt: new Date(),
      });
      // The sweep takes runs queued for longer than runLeaseMs (1.5 s here), every third of it.
      const answer = await sync(echo, id, api.url, '?timeout=10');
      expect(answer.body).toEqual({ success: true, outputs: [{ title: 'orphan', message: 'yes' }] });
      expect(answer.elapsedMs).toBeGreaterThan(1000);
    });

    it("role 'api' with the in-process runner is refused at startup, naming the option", async () => {
      await expect(
        Test.createTestingModule({
          imports: [WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: ':memory:' }, role: 'api' })],
        })
          .compile()
          .then((m) => m.init()),
      ).rejects.toThrow(/invalid option "role": 'api' means this process never runs bots/);
    });

    it("keeps the queue under the keyPrefix, nothing under BullMQ's default 'bull:'", async () => {
      const redis = new Redis(redisUrl);
      const keys = await redis.keys(`${keyPrefix.replace(/:$/, '')}:runs:*`);
      expect(keys.length).toBeGreaterThan(0);
      expect(await redis.keys('bull:*')).toEqual([]);
      redis.disconnect();
    });
  });
}
