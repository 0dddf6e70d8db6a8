import { BotRunner, WebhookTriggersAdmin } from '../../src/index.js';
import { ACCOUNT_BACKLOG_FULL } from '../../src/errors/webhook-trigger.messages.js';
import { accountBacklogShare } from '../../src/runs/run-backlog.js';
import { EchoBot, OtherSlowBot, SlowBot } from '../fixtures/bots.js';
import { BullMqCluster, type ApiNode } from '../helpers/bullmq-cluster.js';
import { cancelRun, expectError, startRun, syncInvocation, triggerBot, until } from '../helpers/http.js';
import { serviceUrl } from '../helpers/services.js';
import { triggerOn, type TestTrigger } from '../helpers/webhook-app.js';
import { storedCredits, storedInvocations } from '../helpers/db.js';
import { Redis } from 'ioredis';

const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');
const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

/** Jobs the run queue may hold waiting before the API nodes answer 503. */
const MAX_QUEUED = 3;
/** Past its share one account's triggers get 429, when the bots belong to several; less than MAX_QUEUED. */
const SHARE = accountBacklogShare(MAX_QUEUED);

if (!redisUrl || !postgresUrl) {
  it.todo(
    'BullMQ backlog suite NOT RUN: set WEBHOOK_TEST_REDIS_URL=redis://127.0.0.1:6379 and WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test',
  );
} else {
  /**
   * A cluster of the two accounts' slow bots (acct's SlowBot, other's OtherSlowBot; 100 credits each) bounded at
   * `maxQueuedRuns`, whose workers run one run at a time, and its first API node; `runLeaseMs` when given.
   */
  const twoAccountCluster = async (maxQueuedRuns: number, runLeaseMs?: number): Promise<{ cluster: BullMqCluster; api: ApiNode }> => {
    const cluster = await BullMqCluster.create(redisUrl, postgresUrl, {
      providers: [SlowBot, OtherSlowBot],
      options: { maxQueuedRuns, maxConcurrentRuns: 1, shutdownGraceMs: 0, ...(runLeaseMs ? { runLeaseMs } : {}) },
    });
    const api = await cluster.startApi();
    const admin = api.app.get(WebhookTriggersAdmin);
    await admin.setCredits('acct', 100);
    await admin.setCredits('other', 100);
    return { cluster, api };
  };

  describe('bounded backlog on BullMQ (maxQueuedRuns): a bound on the run queue, shared by its API nodes', () => {
    let cluster: BullMqCluster;
    let api: ApiNode;
    let other: ApiNode;
    const store = () => ({ type: 'postgres' as const, url: cluster.dbUrl });

    beforeAll(async () => {
      cluster = await BullMqCluster.create(redisUrl, postgresUrl, {
        providers: [EchoBot],
        options: { maxQueuedRuns: MAX_QUEUED, shutdownGraceMs: 0 },
      });
      api = await cluster.startApi();
      other = await cluster.startApi();
      await api.app.get(WebhookTriggersAdmin).setCredits('acct', 100);
    });

    afterAll(() => cluster?.close());

    it('with no worker the queue fills, all of it with one account when every bot is of that account: both API nodes answer 503 with Retry-After, nothing stored or charged; once a worker drains it, 200 again', async () => {
      const created = await api.app.get(WebhookTriggersAdmin).createTrigger('echo', { name: 'echo' });
      const on = (node: ApiNode): TestTrigger => triggerOn({ baseUrl: node.url }, { id: created.id, key: created.key, botId: 'echo' });

      const accepted: string[] = [];
      for (let i = 0; i < MAX_QUEUED; i++) accepted.push(await startRun(on(api), { i }));
      // This node counts its own jobs at once, without waiting for its next read of the queue.
      const refusedHere = await triggerBot(on(api), { over: 'here' });
      expectError(refusedHere, 503);
      expect(refusedHere.headers.get('retry-after')).toBe('1');
      expect(refusedHere.body.message).toMatch(/maxQueuedRuns: 3/);
      // Past what its share would be: no share to keep for nobody, and no account counted.
      expect(accepted.length).toBeGreaterThan(SHARE);
      expect(api.app.get(BotRunner).backlogOf('acct')).toBe(0);
      // The other node sees them at its next read of the queue (every 250 ms).
      await until(() => other.app.get(BotRunner).backlog() >= MAX_QUEUED, 2_000, "the other node's read of the queue");
      const refusedThere = await triggerBot(on(other), { over: 'there' });
      expectError(refusedThere, 503);
      expect(refusedThere.headers.get('retry-after')).toBe('1');

      expect(await storedCredits(store(), 'acct')).toBe(100 - MAX_QUEUED);
      expect((await storedInvocations(store(), created.id)).map((r) => r.id).sort()).toEqual([...accepted].sort());

      await cluster.startWorker();
      for (const id of accepted) expect((await syncInvocation(on(other), id)).body).toMatchObject({ success: true });
      await until(() => api.app.get(BotRunner).backlog() === 0 && other.app.get(BotRunner).backlog() === 0, 3_000, 'an empty queue');
      const again = await startRun(on(other), { after: 'drain' });
      expect((await syncInvocation(on(api), again)).body).toMatchObject({ success: true });
      expect(await storedCredits(store(), 'acct')).toBe(100 - MAX_QUEUED - 1);
    }, 30_000);
  });

  describe('bounded backlog on BullMQ: a node counts its own runs', () => {
    let cluster: BullMqCluster;
    beforeAll(async () => {
      cluster = await BullMqCluster.create(redisUrl, postgresUrl, { providers: [EchoBot], options: { maxQueuedRuns: MAX_QUEUED } });
    });
    afterAll(() => cluster?.close());

    it('from the moment it dispatches one, before Redis has it and whatever its reads of the queue say', async () => {
      const api = await cluster.startApi();
      const runner = api.app.get(BotRunner);
      const before = runner.backlog();
      // No worker: the job stays in the queue. Checked in the same tick as the dispatch, so no read of the
      // queue can have counted it yet: only the node's own count can.
      const added = runner.dispatch({ id: 'inv_counted_at_once_00000', accountId: 'acct' });
      expect(runner.backlog()).toBe(before + 1);
      await added;
      expect(runner.backlog()).toBe(before + 1);
      // Two reads of the queue later (watched as they pass, not changed), it is counted once, not twice.
      const backlog = (runner as unknown as { queueBacklog: { read(): Promise<void> } }).queueBacklog;
      const reads = jest.spyOn(backlog, 'read');
      try {
        await until(() => reads.mock.calls.length >= 2, 2_000, 'two reads of the queue');
        await Promise.all(reads.mock.results.map((r) => r.value as Promise<void>));
      } finally {
        reads.mockRestore();
      }
      expect(runner.backlog()).toBe(before + 1);
    });
  });

  describe("bounded backlog on BullMQ: one account's share when the bots belong to two, across the API nodes", () => {
    /** One account may hold 2 waiting runs of the 4; one more of its runs executes on the worker's only slot. */
    const MAX = 4;
    const HALF = accountBacklogShare(MAX);
    let cluster: BullMqCluster;
    let api: ApiNode;
    let other: ApiNode;
    const store = () => ({ type: 'postgres' as const, url: cluster.dbUrl });

    beforeAll(async () => {
      ({ cluster, api } = await twoAccountCluster(MAX));
      other = await cluster.startApi();
      await cluster.startWorker();
    });

    afterAll(() => cluster?.close());

    it("counts an account's waiting runs, not its running one: past its share 429 on every node, nothing stored or charged, while the other account's are accepted up to the bound", async () => {
      const admin = api.app.get(WebhookTriggersAdmin);
      const slow = await admin.createTrigger('slow', { name: 'slow' });
      const otherSlow = await admin.createTrigger('other-slow', { name: 'other-slow' });
      const on = (node: ApiNode, created: { id: string; key: string }, botId: string): TestTrigger =>
        triggerOn({ baseUrl: node.url }, { id: created.id, key: created.key, botId });
      const runner = (node: ApiNode) => node.app.get(BotRunner);

      // acct's first run holds the worker's only slot; once a read of the queue saw it held, it is not waiting.
      const holder = await startRun(on(api, slow, 'slow'), { ms: 60_000 });
      await until(
        async () => (await storedInvocations(store(), slow.id)).find((r) => r.id === holder)?.status === 'running',
        5_000,
        'the holder to run',
      );
      await until(
        () => runner(api).backlog() === 0 && runner(api).backlogOf('acct') === 0,
        2_000,
        'a read of the queue with the holder running',
      );

      // A run of the other account waits, accepted by the other node; once this node's read saw it, the queue holds
      // one job, and acct's run held by the worker is still not among acct's waiting ones.
      const otherWaiting = [await startRun(on(other, otherSlow, 'other-slow'), { ms: 10, i: 0 })];
      await until(() => runner(api).backlog() === 1, 2_000, "this node's read of the other node's run");
      expect(runner(api).backlogOf('acct')).toBe(0);

      const accepted = [holder];
      for (let i = 0; i < HALF; i++) accepted.push(await startRun(on(api, slow, 'slow'), { ms: 10, i }));
      // acct holds its share of the waiting runs: refused here at once (this node's own runs count at once) ...
      const refusedHere = await triggerBot(on(api, slow, 'slow'), { ms: 10, over: 'here' });
      expectError(refusedHere, 429);
      expect(refusedHere.headers.get('retry-after')).toBe('1');
      expect(refusedHere.body.message).toBe(ACCOUNT_BACKLOG_FULL(HALF));
      // ... and on the other node from its next read of the queue (every 250 ms).
      await until(() => runner(other).backlogOf('acct') >= HALF, 2_000, "the other node's read of acct's runs");
      const refusedThere = await triggerBot(on(other, slow, 'slow'), { ms: 10, over: 'there' });
      expectError(refusedThere, 429);
      expect(refusedThere.body.message).toBe(ACCOUNT_BACKLOG_FULL(HALF));

      // The other account's runs are still accepted, on either node, up to the whole bound; then 503.
      for (let i = 1; i < MAX - HALF; i++) otherWaiting.push(await startRun(on(api, otherSlow, 'other-slow'), { ms: 10, i }));
      expect(runner(api).backlog()).toBe(MAX);
      expectError(await triggerBot(on(api, otherSlow, 'other-slow'), { ms: 10, over: 'bound' }), 503);

      // Charged exactly for the accepted runs; no row for the refused ones.
      expect(await storedCredits(store(), 'acct')).toBe(100 - 1 - HALF);
      expect(await storedCredits(store(), 'other')).toBe(100 - (MAX - HALF));
      expect((await storedInvocations(store(), slow.id)).map((r) => r.id).sort()).toEqual([...accepted].sort());
      expect((await storedInvocations(store(), otherSlow.id)).map((r) => r.id).sort()).toEqual([...otherWaiting].sort());

      // The holder's slot frees; every waiting run starts and finishes.
      expect((await cancelRun(on(api, slow, 'slow'), holder)).status).toBe(200);
      for (const id of accepted.slice(1)) expect((await syncInvocation(on(api, slow, 'slow'), id)).body).toMatchObject({ success: true });
      for (const id of otherWaiting)
        expect((await syncInvocation(on(other, otherSlow, 'other-slow'), id)).body).toMatchObject({ success: true });
    }, 30_000);
  });

  describe("bounded backlog on BullMQ: an account's share holds while its runs wait, however long since its last accepted trigger", () => {
    /** One account may hold 2 waiting runs of the 4; the worker has one slot. */
    const MAX = 4;
    const HALF = accountBacklogShare(MAX);
    let cluster: BullMqCluster;
    let api: ApiNode;
    let redis: Redis;

    beforeAll(async () => {
      ({ cluster, api } = await twoAccountCluster(MAX));
      await cluster.startWorker();
      redis = new Redis(redisUrl);
    });

    afterAll(async () => {
      await redis?.quit();
      await cluster?.close();
    });

    it("runs of the account still ending keep its count of runs pending: past its share it is still refused 429 once its last accepted trigger is older than the count's expiry", async () => {
      const slow = await api.app.get(WebhookTriggersAdmin).createTrigger('slow', { name: 'slow' });
      const on = triggerOn({ baseUrl: api.url }, { id: slow.id, key: slow.key, botId: 'slow' });
      const runner = api.app.get(BotRunner);
      const status = async (id: string) =>
        (await storedInvocations({ type: 'postgres', url: cluster.dbUrl }, slow.id)).find((r) => r.id === id)?.status;

      // The worker's only slot: a run that ends soon; behind it, one that runs long and one short, both waiting.
      const first = await startRun(on, { ms: 1_500 });
      await until(async () => (await status(first)) === 'running', 5_000, 'the first run to start');
      await until(() => runner.backlog() === 0 && runner.backlogOf('acct') === 0, 2_000, 'a read of the queue with it running');
      const long = await startRun(on, { ms: 60_000 });
      const waiting = await startRun(on, { ms: 10 });
      await until(() => runner.backlogOf('acct') >= HALF, 2_000, "a read of acct's waiting runs");
      expectError(await triggerBot(on, { ms: 10, over: 'share' }), 429);

      // The account's count of runs pending lives 10 minutes past its last enqueue: here as if those minutes had
      // nearly passed (its triggers refused meanwhile), while its runs go on ending and starting.
      const countKey = `${cluster.keyPrefix}pending-runs:acct`;
      expect(await redis.pexpire(countKey, 2_000)).toBe(1);
      expect(await status(first)).toBe('running'); // it ends after that
      await until(async () => (await status(long)) === 'running', 5_000, 'the first run to end and the long one to start');
      // Past the count's expiry, and a read of the queue after it.
      await new Promise((resolve) => setTimeout(resolve, 2_300));

      // One run of acct waits, one runs: one more is accepted (its share), then 429 again, as before.
      const third = await startRun(on, { ms: 10 });
      const over = await triggerBot(on, { ms: 10, over: 'after' });
      expectError(over, 429);
      expect(over.body.message).toBe(ACCOUNT_BACKLOG_FULL(HALF));

      expect((await cancelRun(on, long)).status).toBe(200);
      for (const id of [waiting, third]) expect((await syncInvocation(on, id)).body).toMatchObject({ success: true });
    }, 30_000);
  });

  describe("bounded backlog on BullMQ: a run dispatched again while its job is in the queue (a recovery's) counts once in its account's share", () => {
    const MAX = 4;
    const HALF = accountBacklogShare(MAX);
    let cluster: BullMqCluster;
    let api: ApiNode;

    beforeAll(async () => {
      ({ cluster, api } = await twoAccountCluster(MAX));
    });

    afterAll(() => cluster?.close());

    it('once that run ended, its account has no run waiting: its trigger is accepted while the other account fills its share', async () => {
      const admin = api.app.get(WebhookTriggersAdmin);
      const slow = await admin.createTrigger('slow', { name: 'slow' });
      const otherSlow = await admin.createTrigger('other-slow', { name: 'other-slow' });
      const on = (created: { id: string; key: string }, botId: string): TestTrigger =>
        triggerOn({ baseUrl: api.url }, { id: created.id, key: created.key, botId });
      const runner = api.app.get(BotRunner);

      // No worker yet: the run's job waits in the queue while it is dispatched again (as LeaseRecovery does for a
      // retryInterrupted run whose job BullMQ still holds): BotRunner.dispatch is safe to call twice for one run.
      const run = await startRun(on(slow, 'slow'), { ms: 10 });
      await runner.dispatch({ id: run, accountId: 'acct' });
      await runner.dispatch({ id: run, accountId: 'acct' });
      const worker = await cluster.startWorker();
      expect((await syncInvocation(on(slow, 'slow'), run)).body).toMatchObject({ success: true });
      await worker.close();
      await until(() => runner.backlog() === 0, 2_000, 'a read of the empty queue');

      // The other account's runs wait, as many as its share.
      for (let i = 0; i < HALF; i++) await startRun(on(otherSlow, 'other-slow'), { ms: 10, i });
      await until(() => runner.backlog() === HALF, 2_000, "a read of the other account's runs");
      await new Promise((resolve) => setTimeout(resolve, 600)); // reads of the queue (every 250 ms) after them
      await startRun(on(slow, 'slow'), { ms: 10, after: 'ended' });
    }, 30_000);
  });

  describe("bounded backlog on BullMQ: a run whose enqueue Redis failed after counting it, added later by a sweep, counts once in its account's share", () => {
    const MAX = 4;
    const HALF = accountBacklogShare(MAX);
    /** Workers sweep every third of it for runs queued longer than it. */
    const LEASE_MS = 1_500;
    let cluster: BullMqCluster;
    let api: ApiNode;
    let redis: Redis;

    beforeAll(async () => {
      ({ cluster, api } = await twoAccountCluster(MAX, LEASE_MS));
      redis = new Redis(redisUrl);
    });

    afterAll(async () => {
      await redis?.quit();
      await cluster?.close();
    });

    it("once that run ended, its account has no run waiting: as many of its triggers as its share are accepted while the other account's wait", async () => {
      const admin = api.app.get(WebhookTriggersAdmin);
      const slow = await admin.createTrigger('slow', { name: 'slow' });
      const otherSlow = await admin.createTrigger('other-slow', { name: 'other-slow' });
      const on = triggerOn({ baseUrl: api.url }, { id: slow.id, key: slow.key, botId: 'slow' });
      const onOther = triggerOn({ baseUrl: api.url }, { id: otherSlow.id, key: otherSlow.key, botId: 'other-slow' });
      const runner = api.app.get(BotRunner);

      // Redis answers the count of the run's account, then fails the add: BullMQ's add script reads the queue's meta
      // hash, made a string here. The trigger is answered 200 anyway (stored and charged), and its job is not added.
      const meta = `${cluster.keyPrefix}runs:meta`;
      await redis.del(meta);
      await redis.set(meta, 'not a hash');
      const run = await startRun(on, { ms: 10 });
      expect(await redis.exists(`${cluster.keyPrefix}runs:${run}`)).toBe(0);
      await redis.del(meta);

      // A worker's sweep adds it (queued longer than runLeaseMs) and runs it.
      const worker = await cluster.startWorker();
      expect((await syncInvocation(on, run)).body).toMatchObject({ success: true });
      await worker.close();
      await until(() => runner.backlog() === 0, 2_000, 'a read of the empty queue');

      // The other account's runs wait, as many as its share (an account's count is capped by the queue's waiting jobs).
      for (let i = 0; i < HALF; i++) await startRun(onOther, { ms: 10, i });
      await until(() => runner.backlog() === HALF, 2_000, "a read of the other account's runs");
      await new Promise((resolve) => setTimeout(resolve, 600)); // reads of the queue (every 250 ms) after them

      // Nothing of acct waits: its share is whole (it was one short for 10 idle minutes, the failed add's run counted for good).
      for (let i = 0; i < HALF; i++) await startRun(on, { ms: 10, i });
      expectError(await triggerBot(on, { ms: 10, over: 'share' }), 503);
    }, 30_000);
  });
}
