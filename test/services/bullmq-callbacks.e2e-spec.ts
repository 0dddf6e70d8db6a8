/**
 * Callbacks across nodes (docs/callbacks.md): an API node and a BullMQ worker on one PostgreSQL database and one
 * Redis. The worker that runs the bot sends its completed delivery at once; a queued run cancelled on the API node
 * (which never sends) is delivered by the worker's sweep.
 */
import { WebhookTriggersAdmin } from '../../src/index.js';
import { EchoBot, SlowBot } from '../fixtures/bots.js';
import { BullMqCluster, type ApiNode } from '../helpers/bullmq-cluster.js';
import { startCallbackReceiver, type CallbackReceiver } from '../helpers/callback-receiver.js';
import { cancelRun, startRun, until } from '../helpers/http.js';
import { serviceUrl } from '../helpers/services.js';
import type { TestTrigger } from '../helpers/webhook-app.js';

const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');
const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

if (!redisUrl || !postgresUrl) {
  it.todo(
    'Callbacks across nodes NOT RUN: set WEBHOOK_TEST_REDIS_URL=redis://127.0.0.1:6379 and WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test',
  );
} else {
  describe('callbacks with an API node and a BullMQ worker', () => {
    let cluster: BullMqCluster;
    let api: ApiNode;
    let admin: WebhookTriggersAdmin;
    let receiver: CallbackReceiver;

    async function triggerWithCallback(botId: string): Promise<TestTrigger> {
      const created = await admin.createTrigger(botId, { name: `${botId} callbacks` });
      await admin.setCallback(created.id, { url: `${receiver.origin}/runs` });
      return { id: created.id, key: created.key, botId, url: `${api.url}/webhooks/${created.id}/trigger` };
    }

    const bodies = () =>
      receiver.received.map((c) => JSON.parse(c.body.toString()) as { data: { invocation: { id: string; status: string } } });

    beforeAll(async () => {
      receiver = await startCallbackReceiver();
      cluster = await BullMqCluster.create(redisUrl, postgresUrl, {
        providers: [EchoBot, SlowBot],
        options: { callbackAllowedHosts: ['127.0.0.1'], callbackRetryScheduleMs: [0, 300], shutdownGraceMs: 0, maxConcurrentRuns: 1 },
      });
      api = await cluster.startApi();
      admin = api.app.get(WebhookTriggersAdmin);
      await admin.setCredits('acct', 100);
      await cluster.startWorker();
    });
    afterAll(async () => {
      await cluster?.close();
      await receiver?.close();
    });

    it("the worker that ran the bot delivers the run's completion at once", async () => {
      const echo = await triggerWithCallback('echo');
      const startedAt = Date.now();
      const id = await startRun(echo, { hello: 'worker' });
      await until(() => bodies().some((b) => b.data.invocation.id === id), 5_000, 'the completed callback');
      expect(Date.now() - startedAt).toBeLessThan(3_000); // woken in process, not by the 5 s sweep
      expect(bodies().find((b) => b.data.invocation.id === id)!.data.invocation.status).toBe('succeeded');
      await until(async () => (await admin.listDeliveries(echo.id))?.[0]?.status === 'delivered', 2_000, 'delivered');
    });

    it('a queued run cancelled on the API node is delivered by the worker', async () => {
      const slow = await triggerWithCallback('slow');
      const echo = await triggerWithCallback('echo');
      await startRun(slow, { ms: 1_500 }); // the worker's one slot
      const queued = await startRun(echo, { never: 'ran' });
      const cancelled = await cancelRun(echo, queued);
      expect(cancelled.status).toBe(200);
      await until(() => bodies().some((b) => b.data.invocation.id === queued), 8_000, "the cancelled run's callback");
      expect(bodies().find((b) => b.data.invocation.id === queued)!.data.invocation.status).toBe('cancelled');
      // The receiver has the body before the sender records the attempt: wait for the record.
      await until(async () => (await admin.listDeliveries(echo.id))?.[0]?.status === 'delivered', 5_000, 'the delivery recorded');
      expect((await admin.listDeliveries(echo.id))?.[0]).toMatchObject({ invocationId: queued, status: 'delivered' });
    });
  });
}
