import { BotRunner, WebhookTriggersAdmin } from '../../src/index.js';
import { EchoBot } from '../fixtures/bots.js';
import { BullMqCluster, type ApiNode } from '../helpers/bullmq-cluster.js';
import { expectError, startRun, syncInvocation, triggerBot, until } from '../helpers/http.js';
import { serviceUrl } from '../helpers/services.js';
import { triggerOn, type TestTrigger } from '../helpers/webhook-app.js';
import { storedCredits, storedInvocations } from '../helpers/db.js';

const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');
const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

/** Jobs the run queue may hold waiting before the API nodes answer 503. */
const MAX_QUEUED = 3;

if (!redisUrl || !postgresUrl) {
  it.todo(
    'BullMQ backlog suite NOT RUN: set WEBHOOK_TEST_REDIS_URL=redis://127.0.0.1:6379 and WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test',
  );
} else {
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

    it('with no worker the queue fills: both API nodes answer 503 with Retry-After, nothing stored or charged; once a worker drains it, 200 again', async () => {
      const created = await api.app.get(WebhookTriggersAdmin).createTrigger('echo', { name: 'echo' });
      const on = (node: ApiNode): TestTrigger => triggerOn({ baseUrl: node.url }, { id: created.id, key: created.key, botId: 'echo' });

      const accepted: string[] = [];
      for (let i = 0; i < MAX_QUEUED; i++) accepted.push(await startRun(on(api), { i }));
      // This node counts its own jobs at once, without waiting for its next read of the queue.
      const refusedHere = await triggerBot(on(api), { over: 'here' });
      expectError(refusedHere, 503);
      expect(refusedHere.headers.get('retry-after')).toBe('1');
      expect(refusedHere.body.message).toMatch(/maxQueuedRuns: 3/);
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
      const backlog = (runner as unknown as { queued: { read(): Promise<void> } }).queued;
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
}
