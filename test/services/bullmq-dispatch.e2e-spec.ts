/**
 * How BullMqBotRunner hands dispatched runs to Redis: the dispatches of one event-loop turn, and those
 * arriving while a batch is in flight, go as one `addBulk` of the real BullMQ queue against real Redis;
 * the jobs are the ones a lone `add` made (job id = invocation id, the queue's options), and every run runs.
 */
import { Queue } from 'bullmq';
import Redis from 'ioredis';
import { Client } from 'pg';
import { BotRunner, InvocationRepository, WebhookTriggersAdmin } from '../../src/index.js';
import { newInvocationId } from '../../src/keys/ids.js';
import { WEBHOOK_RUN_QUEUE } from '../../src/redis/index.js';
import { EchoBot } from '../fixtures/bots.js';
import { BullMqCluster, type ApiNode } from '../helpers/bullmq-cluster.js';
import { request, sleep, until } from '../helpers/http.js';
import { serviceUrl } from '../helpers/services.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { triggerOn, type TestTrigger } from '../helpers/webhook-app.js';

const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');
const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

type BulkJobs = Parameters<Queue['addBulk']>[0];

if (!redisUrl || !postgresUrl) {
  it.todo(
    'BullMQ dispatch suite NOT RUN: set WEBHOOK_TEST_REDIS_URL=redis://127.0.0.1:6379 and WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test',
  );
} else {
  describe('BullMqBotRunner dispatch: one addBulk per event-loop turn, on the real queue', () => {
    const LEASE_MS = 1500;
    let cluster: BullMqCluster;
    let api: ApiNode;
    let pg: Client;
    /** A second handle on the runner's queue, to read its jobs as BullMQ stored them. */
    let queue: Queue;
    let queueConnection: Redis;
    let echo: TestTrigger;

    /** A run stored `queued` as the accept stores it, not yet dispatched. */
    const storeQueued = async (n: number, node: ApiNode = api): Promise<string> => {
      const id = newInvocationId();
      await node.app.get(InvocationRepository).insert({
        id,
        triggerId: echo.id,
        botId: 'echo',
        accountId: 'acct',
        inputs: { n: String(n) },
        credits: 0,
        idempotencyKey: null,
        requestHash: null,
        createdAt: new Date(),
      });
      return id;
    };
    const statuses = async (ids: string[]) =>
      (await pg.query<{ id: string; status: string }>('SELECT id, status FROM webhook_invocations WHERE id = ANY($1)', [ids])).rows.map(
        (r) => r.status,
      );
    const allSucceeded = async (ids: string[]) => {
      const s = await statuses(ids);
      return s.length === ids.length && s.every((x) => x === 'succeeded');
    };
    /** The job ids of each `addBulk` call that carried any of `ids` (a worker's sweep may add others meanwhile). */
    const bulksOf = (spy: jest.SpyInstance<ReturnType<Queue['addBulk']>, [BulkJobs]>, ids: string[]) =>
      spy.mock.calls.map(([jobs]) => jobs.map((j) => j.opts!.jobId!)).filter((jobIds) => jobIds.some((id) => ids.includes(id)));

    beforeAll(async () => {
      cluster = await BullMqCluster.create(redisUrl, postgresUrl, {
        providers: [EchoBot],
        options: { runLeaseMs: LEASE_MS, shutdownGraceMs: 0 },
      });
      api = await cluster.startApi();
      pg = new Client({ connectionString: cluster.dbUrl });
      await pg.connect();
      queueConnection = new Redis(redisUrl, { maxRetriesPerRequest: null });
      queue = new Queue(WEBHOOK_RUN_QUEUE, {
        connection: queueConnection,
        prefix: cluster.keyPrefix.replace(/:+$/, ''),
      });
      const admin = api.app.get(WebhookTriggersAdmin);
      await admin.setCredits('acct', 1000);
      const created = await admin.createTrigger('echo', { name: 'echo' });
      echo = triggerOn({ baseUrl: api.url }, { id: created.id, key: created.key, botId: 'echo' });
    });

    afterEach(() => jest.restoreAllMocks());

    afterAll(async () => {
      await queue?.close();
      queueConnection?.disconnect(); // a connection handed to BullMQ stays the caller's to close
      await pg?.end();
      await cluster?.close();
    });

    it('20 dispatches in one turn are one addBulk; the jobs carry the invocation ids and the queue options; a repeat adds nothing; all 20 run once a worker starts', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push(await storeQueued(i));
      const runner = api.app.get(BotRunner);
      const addBulk = jest.spyOn(Queue.prototype, 'addBulk');

      await Promise.all(ids.map((id) => runner.dispatch({ id, accountId: 'acct' })));

      expect(bulksOf(addBulk, ids)).toEqual([ids]);
      expect(addBulk.mock.calls.find(([jobs]) => jobs.length === 20)![0]).toEqual(
        // Each job carries its account, and its place in the account's line (fair share): 1, 2, … for a fresh account.
        ids.map((id, i) => ({ name: 'run', data: 'acct', opts: { jobId: id, priority: i + 1 } })),
      );
      // No worker yet (the node is role 'api'): the jobs wait in Redis, in line by priority.
      expect(await queue.getPrioritizedCount()).toBe(20);
      const job = (await queue.getJob(ids[0]))!;
      expect(job.opts).toMatchObject({ removeOnComplete: true, removeOnFail: true, attempts: 1 });
      expect(job.data).toBe('acct');
      const addedAt = job.timestamp;

      // The same ids again, in one turn: BullMQ's add script returns the job it holds.
      await Promise.all(ids.slice(0, 5).map((id) => runner.dispatch({ id, accountId: 'acct' })));
      expect(bulksOf(addBulk, ids)).toEqual([ids, ids.slice(0, 5)]);
      expect(await queue.getPrioritizedCount()).toBe(20);
      expect((await queue.getJob(ids[0]))!.timestamp).toBe(addedAt);
      expect(await statuses(ids)).toEqual(Array(20).fill('queued'));

      const worker = await cluster.startWorker();
      try {
        await until(() => allSucceeded(ids), 10_000, 'the 20 runs to succeed');
        // removeOnComplete: a finished run's job is gone, which also frees its id.
        await until(async () => (await queue.getJob(ids[19])) === undefined, 2000, 'the jobs to be removed');
      } finally {
        await worker.close();
      }
    });

    it('dispatches arriving while a batch is in flight go together in the next addBulk, sent when the first is back', async () => {
      const first: string[] = [];
      const second: string[] = [];
      for (let i = 0; i < 3; i++) first.push(await storeQueued(i));
      for (let i = 0; i < 7; i++) second.push(await storeQueued(i));
      const runner = api.app.get(BotRunner);
      const real = Queue.prototype.addBulk;
      let secondSettled: Promise<void[]> | undefined;
      let inFlight = 0;
      let mostInFlight = 0;
      const addBulk = jest.spyOn(Queue.prototype, 'addBulk').mockImplementation(async function (this: Queue, jobs: BulkJobs) {
        mostInFlight = Math.max(mostInFlight, ++inFlight);
        try {
          if (jobs.some((j) => j.opts!.jobId === first[0])) {
            // The first batch is on its way (50 ms longer than Redis takes): the second group arrives
            // now, one dispatch per event-loop turn.
            secondSettled = (async () => {
              const settled: Promise<void>[] = [];
              for (const id of second) {
                settled.push(runner.dispatch({ id, accountId: 'acct' }));
                await new Promise((r) => setImmediate(r));
              }
              return Promise.all(settled);
            })();
            await new Promise((r) => setTimeout(r, 50));
          }
          return await real.call(this, jobs);
        } finally {
          inFlight -= 1;
        }
      });

      await Promise.all(first.map((id) => runner.dispatch({ id, accountId: 'acct' })));
      await secondSettled;

      expect(bulksOf(addBulk, [...first, ...second])).toEqual([first, second]);
      expect(mostInFlight).toBe(1); // one batch at a time
      const worker = await cluster.startWorker();
      try {
        await until(() => allSucceeded([...first, ...second]), 10_000, 'the 10 runs to succeed');
      } finally {
        await worker.close();
      }
    });

    it('30 concurrent triggers over HTTP: all answered 200, each run in exactly one addBulk, all run', async () => {
      const addBulk = jest.spyOn(Queue.prototype, 'addBulk');
      const worker = await cluster.startWorker();
      try {
        const replies = await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            request(`${echo.url}`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-key': echo.key },
              body: JSON.stringify({ i: String(i) }),
            }),
          ),
        );
        expect(replies.map((r) => r.status)).toEqual(Array(30).fill(200));
        const ids = replies.map((r) => r.body.invocation.id as string);
        const bulks = bulksOf(addBulk, ids);
        expect(bulks.flat().sort()).toEqual([...ids].sort());
        console.log(`[bullmq-dispatch] 30 concurrent triggers went to Redis in ${bulks.length} addBulk call(s)`);
        await until(() => allSucceeded(ids), 10_000, 'the 30 runs to succeed');
      } finally {
        await worker.close();
      }
    });

    it('Redis unreachable: every dispatch of the failed batch resolves at once, the runs stay queued, and run once Redis is back', async () => {
      const proxy = new TcpProxy('127.0.0.1', Number(new URL(redisUrl).port || 6379));
      await proxy.open();
      const cut = await cluster.startApi({ redis: { url: proxy.url('redis'), keyPrefix: cluster.keyPrefix } });
      const worker = await cluster.startWorker();
      try {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) ids.push(await storeQueued(i, cut));
        await proxy.cut();
        await sleep(100); // the node has seen its connection drop
        const runner = cut.app.get(BotRunner);
        const addBulk = jest.spyOn(Queue.prototype, 'addBulk');
        const t0 = performance.now();
        await Promise.all(ids.map((id) => runner.dispatch({ id, accountId: 'acct' })));
        expect(performance.now() - t0).toBeLessThan(1000);
        expect(bulksOf(addBulk, ids)).toEqual([ids]);
        expect(await statuses(ids)).toEqual(Array(5).fill('queued'));
        // Back: the node's reconnect sweep (or, LEASE_MS later, the worker's) enqueues them.
        await proxy.open();
        await until(() => allSucceeded(ids), 10_000, 'the 5 runs to succeed');
      } finally {
        await worker.close();
        await cut.close();
        await proxy.cut();
      }
    });
  });
}
