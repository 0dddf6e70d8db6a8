/**
 * Health of an API node whose runs execute on BullMQ workers (`role: 'api'`): down naming `workers` while no
 * worker process beats in Redis, up within a bound once one starts, down again as soon as it stops.
 */
import { HealthModule } from '../../sample-app/src/health/health.module.js';
import { EchoBot } from '../fixtures/bots.js';
import { BullMqCluster, type ApiNode } from '../helpers/bullmq-cluster.js';
import { send, until } from '../helpers/http.js';
import { serviceUrl } from '../helpers/services.js';

const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');
const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

if (!redisUrl || !postgresUrl) {
  it.todo(
    'BullMQ health suite NOT RUN: set WEBHOOK_TEST_REDIS_URL=redis://127.0.0.1:6379 and WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test',
  );
} else {
  describe('health of an API node on BullMQ (terminus)', () => {
    let cluster: BullMqCluster;
    let api: ApiNode;
    const health = () => send('GET', `${api.url}/health`);

    beforeAll(async () => {
      cluster = await BullMqCluster.create(redisUrl, postgresUrl, {
        providers: [EchoBot],
        imports: [HealthModule],
        options: { shutdownGraceMs: 0 },
      });
      api = await cluster.startApi();
    });

    afterAll(() => cluster?.close());

    it('no worker: 503 naming workers (database and Redis up); a worker started: 200 within 2 s; the worker stopped: 503 again', async () => {
      const down = await health();
      expect(down.status).toBe(503);
      expect(down.body.error.webhooks).toMatchObject({
        status: 'down',
        database: { status: 'up' },
        redis: { status: 'up' },
        backlog: { status: 'up', queued: 0 },
        workers: { status: 'down', seen: 0, withinMs: 30_000, error: 'no worker seen in the last 30 s: accepted runs wait in the queue' },
      });

      const worker = await cluster.startWorker();
      const started = performance.now();
      let up = await health();
      await until(async () => (up = await health()).status === 200, 2_000, 'GET /health answering 200 once a worker runs');
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(up.body.details.webhooks.workers).toEqual({ status: 'up', seen: 1, withinMs: 30_000 });

      // A worker leaves the heartbeats when it stops taking runs (shutdown), not 30 s later.
      await worker.close();
      const after = await health();
      expect(after.status).toBe(503);
      expect(after.body.error.webhooks.workers).toMatchObject({ status: 'down', seen: 0 });
    });
  });
}
