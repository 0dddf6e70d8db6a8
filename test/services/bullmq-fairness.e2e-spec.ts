import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { Client } from 'pg';
import { BotRunner, WebhookTriggersAdmin } from '../../src/index.js';
import { InvocationExecutor } from '../../src/runs/invocation.executor.js';
import { AccountQueuePositions } from '../../src/redis/account-queue-positions.js';
import { AccountRunSlots } from '../../src/redis/account-run-slots.js';
import { botMeter, METERED_BOTS, OtherEchoBot, SlowBot } from '../fixtures/bots.js';
import { BullMqCluster, type ApiNode } from '../helpers/bullmq-cluster.js';
import { request, sleep, startRun, until, type HttpResult } from '../helpers/http.js';
import { serviceUrl } from '../helpers/services.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { triggerOn, type TestTrigger } from '../helpers/webhook-app.js';

const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');
const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');
const redisPort = () => Number(new URL(redisUrl!).port || 6379);

/** GET …/sync?timeout=<seconds>. */
const syncWithin = (t: TestTrigger, id: string, seconds: number): Promise<HttpResult> =>
  request(`${t.url}/invocation/${id}/sync?timeout=${seconds}`, { headers: { 'x-key': t.key } });

if (!redisUrl || !postgresUrl) {
  it.todo(
    'BullMQ fairness suite NOT RUN: set WEBHOOK_TEST_REDIS_URL=redis://127.0.0.1:6379 and WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test',
  );
} else {
  describe('fair share without a cap on BullMQ workers (the default): two workers of 4 slots', () => {
    const RUN_MS = 1000;
    let cluster: BullMqCluster;
    let api: ApiNode;
    let redis: Redis;
    let a: TestTrigger;
    let b: TestTrigger;
    let c: TestTrigger;

    beforeAll(async () => {
      cluster = await BullMqCluster.create(redisUrl, postgresUrl, {
        providers: METERED_BOTS,
        options: { maxConcurrentRuns: 4, shutdownGraceMs: 0 },
      });
      api = await cluster.startApi();
      redis = new Redis(redisUrl);
      const admin = api.app.get(WebhookTriggersAdmin);
      const on = async (botId: string, accountId: string) => {
        await admin.setCredits(accountId, 1000);
        const created = await admin.createTrigger(botId, { name: botId });
        return triggerOn({ baseUrl: api.url }, { id: created.id, key: created.key, botId });
      };
      a = await on('metered', 'acct');
      b = await on('metered-b', 'other');
      c = await on('metered-c', 'third');
      await cluster.startWorker();
      await cluster.startWorker();
    });
    beforeEach(() => botMeter.reset());

    afterAll(async () => {
      redis?.disconnect();
      await cluster?.close();
    });

    it('one account on 2 workers of 4 slots runs 8 bots at once', async () => {
      const t0 = performance.now();
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push(await startRun(a, { ms: RUN_MS, i }));
      const results = await Promise.all(ids.map((id) => syncWithin(a, id, 10)));
      expect(results.map((r) => r.body?.success)).toEqual(Array(8).fill(true));
      expect(botMeter.peak('acct')).toBe(8);
      expect(performance.now() - t0).toBeLessThan(2 * RUN_MS); // one wave, not two
      // Every run's end was counted off its account's pending runs: nothing is left behind.
      await until(async () => (await redis.exists(`${cluster.keyPrefix}pending-runs:acct`)) === 0, 2000, 'the pending count to empty');
    }, 30_000);

    it("two accounts with deep backlogs each get half the slots across the workers; a third account's first run starts within one run's duration", async () => {
      const ids: Array<[TestTrigger, string]> = [];
      for (let i = 0; i < 24; i++) ids.push([a, await startRun(a, { ms: RUN_MS, i })]);
      for (let i = 0; i < 24; i++) ids.push([b, await startRun(b, { ms: RUN_MS, i })]);
      await until(() => botMeter.steps.some((s) => s.accountId === 'other'), 5000, "B's first run");
      const bStarted = botMeter.started('other', 'first');

      await sleep(RUN_MS);
      const t0 = performance.now();
      const cId = await startRun(c, { ms: 0 });
      const answer = await syncWithin(c, cId, 10);
      expect(answer.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '0' }] });
      expect(performance.now() - t0).toBeLessThan(RUN_MS + 700);

      const results = await Promise.all(ids.map(([trigger, id]) => syncWithin(trigger, id, 30)));
      expect(results.every((r) => r.body?.success === true)).toBe(true);
      // While both had runs waiting: from one run after B's first start until either's last start.
      const share = botMeter.share(
        'acct',
        bStarted + RUN_MS,
        Math.min(botMeter.started('acct', 'last'), botMeter.started('other', 'last')),
      );
      expect(share).toBeGreaterThanOrEqual(0.4);
      expect(share).toBeLessThanOrEqual(0.6);
      expect(botMeter.peak()).toBe(8);
    }, 60_000);

    it("the queue positions: a batch's runs come after their account's runs pending, one script call per account; a run counts once however often it is enqueued or its end reported; the count expires 10 minutes after the last enqueue and goes at zero; without Redis, positions from 1", async () => {
      const logger = new Logger('test');
      jest.spyOn(logger, 'debug').mockImplementation(() => undefined);
      const client = new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 500 });
      await until(() => client.status === 'ready', 2000, 'redis');
      const positions = new AccountQueuePositions(client, `${cluster.keyPrefix}positions:`, logger);
      const run = (id: string, accountId: string) => ({ id, accountId });
      const sent: string[] = [];
      const sendCommand = client.sendCommand.bind(client);
      client.sendCommand = (command, stream) => {
        sent.push(command.name);
        return sendCommand(command, stream);
      };
      try {
        expect(await positions.enqueued([run('0', 'r')])).toEqual([1]); // the script loaded, if Redis did not have it
        sent.length = 0;
        expect(await positions.enqueued([run('1', 'p'), run('2', 'q'), run('3', 'p')])).toEqual([1, 1, 2]);
        expect(sent).toHaveLength(2); // one call per account, not one per run nor two per account
        expect(await positions.enqueued([run('4', 'p')])).toEqual([3]);
        // Enqueued again (a run dispatched again, a batch sent again): still one of p's runs pending.
        expect(await positions.enqueued([run('1', 'p')])).toEqual([4]);
        expect(await positions.enqueued([run('4', 'p')])).toEqual([4]);
        const ttl = await client.pttl(positions.key('p'));
        expect(ttl).toBeGreaterThan(9 * 60_000);
        expect(ttl).toBeLessThanOrEqual(10 * 60_000);
        // A run's end resolves once Redis took it off (a worker awaits it before BullMQ completes the job).
        await positions.runEnded('q', '2');
        expect(await client.exists(positions.key('q'))).toBe(0);
        // Run 1's end reported twice (by two workers, or again after a lost reply), run 4's once, in one script call:
        // run 3 is still pending.
        sent.length = 0;
        await Promise.all(['1', '1', '4'].map((id) => positions.runEnded('p', id)));
        expect(sent).toHaveLength(1);
        expect(await client.scard(positions.key('p'))).toBe(1);
        expect(await positions.enqueued([run('8', 'p')])).toEqual([2]);
        await Promise.all(['3', '8'].map((id) => positions.runEnded('p', id)));
        expect(await client.exists(positions.key('p'))).toBe(0);
        expect(await positions.enqueued([run('5', 'p')])).toEqual([1]);
      } finally {
        client.disconnect();
      }
      // Redis gone: positions count from 1 (the add that follows fails too; the sweep enqueues the runs later).
      expect(await positions.enqueued([run('6', 'p'), run('7', 'p')])).toEqual([1, 2]);
    });

    it("a run's end whose report Redis failed is reported again once Redis answers: the run leaves its account's runs pending", async () => {
      const logger = new Logger('test');
      const debug = jest.spyOn(logger, 'debug').mockImplementation(() => undefined);
      const proxy = new TcpProxy('127.0.0.1', redisPort());
      await proxy.open();
      const client = new Redis(proxy.url('redis'), { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 500 });
      try {
        await until(() => client.status === 'ready', 2000, 'redis');
        const positions = new AccountQueuePositions(client, `${cluster.keyPrefix}retried:`, logger);
        expect(await positions.enqueued([{ id: 'r1', accountId: 'f' }])).toEqual([1]);

        // The worker's Redis connection drops as the run ends: the report fails (logged), the run is still pending.
        await proxy.cut();
        await positions.runEnded('f', 'r1');
        expect(debug).toHaveBeenCalledWith(expect.stringMatching(/^Ended runs not counted/));
        expect(await redis.sismember(positions.key('f'), 'r1')).toBe(1);

        // Redis answers again: the end is reported again, without another run ending on this worker.
        await proxy.open();
        await until(async () => (await redis.exists(positions.key('f'))) === 0, 5000, "the run to leave f's runs pending");
      } finally {
        client.disconnect();
        await proxy.cut();
      }
    });
  });

  describe('a hard per-account cap on BullMQ workers: maxConcurrentRunsPerAccount 2 holds across all workers', () => {
    /** Workers of 4 slots each; maxConcurrentRunsPerAccount 2, for all workers together. */
    const LEASE_MS = 1500;
    let cluster: BullMqCluster;
    let api: ApiNode;
    let pg: Client;
    /** The sampler's own connection, so its queries never queue behind the test's. */
    let pgSampler: Client;
    let redis: Redis;
    let slow: TestTrigger;
    let otherEcho: TestTrigger;

    const slotKey = (accountId: string) => `${cluster.keyPrefix}run-slots:${accountId}`;
    const row = async (id: string) =>
      (
        await pg.query<{ status: string; owner: string | null; error: string | null; started_at: string | null }>(
          'SELECT status, owner, error, started_at FROM webhook_invocations WHERE id = $1',
          [id],
        )
      ).rows[0];
    const runningOf = async (accountId: string, client = pg) =>
      (
        await client.query<{ owner: string }>(`SELECT owner FROM webhook_invocations WHERE account_id = $1 AND status = 'running'`, [
          accountId,
        ])
      ).rows.map((r) => r.owner);

    beforeAll(async () => {
      cluster = await BullMqCluster.create(redisUrl, postgresUrl, {
        providers: [SlowBot, OtherEchoBot],
        options: { maxConcurrentRuns: 4, maxConcurrentRunsPerAccount: 2, runLeaseMs: LEASE_MS, shutdownGraceMs: 0 },
      });
      api = await cluster.startApi();
      pg = new Client({ connectionString: cluster.dbUrl });
      await pg.connect();
      pgSampler = new Client({ connectionString: cluster.dbUrl });
      await pgSampler.connect();
      redis = new Redis(redisUrl);
      const admin = api.app.get(WebhookTriggersAdmin);
      await admin.setCredits('acct', 1000);
      await admin.setCredits('other', 1000);
      const on = async (botId: string) => {
        const created = await admin.createTrigger(botId, { name: botId });
        return triggerOn({ baseUrl: api.url }, { id: created.id, key: created.key, botId });
      };
      slow = await on('slow');
      otherEcho = await on('other-echo');
    });

    afterAll(async () => {
      await pg?.end();
      await pgSampler?.end();
      redis?.disconnect();
      await cluster?.close();
    });

    it("two workers of 4 slots never run more than 2 of one account's runs together; another account's run answers at once; no slot is left once all ended", async () => {
      const workers = [await cluster.startWorker(), await cluster.startWorker()];
      let peakRows = 0;
      let peakSlots = 0;
      const owners = new Set<string>();
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const running = await runningOf('acct', pgSampler);
          running.forEach((o) => owners.add(o));
          peakRows = Math.max(peakRows, running.length);
          peakSlots = Math.max(peakSlots, await redis.zcard(slotKey('acct')));
          await sleep(20);
        }
      })();
      try {
        const aIds: string[] = [];
        for (let i = 0; i < 8; i++) aIds.push(await startRun(slow, { ms: 2000, i }));
        await until(async () => (await runningOf('acct')).length >= 2, 5000, "A's runs running");

        // Without the limit A's 8 runs would hold all 8 worker slots, and B's run would wait 2 s for one.
        const t0 = performance.now();
        const bId = await startRun(otherEcho, { from: 'B' });
        const b = await syncWithin(otherEcho, bId, 5);
        const bMs = performance.now() - t0;
        expect(b.status).toBe(200);
        expect(b.body).toEqual({ success: true, outputs: [{ title: 'from', message: 'B' }] });
        expect(bMs).toBeLessThan(1000);
        const statuses: string[] = [];
        for (const id of aIds) statuses.push((await row(id)).status);
        expect(statuses.filter((s) => s === 'queued').length).toBeGreaterThanOrEqual(5); // waiting, not failed

        const results = await Promise.all(aIds.map((id) => syncWithin(slow, id, 30)));
        expect(results.map((r) => r.body?.success)).toEqual(Array(8).fill(true));
      } finally {
        sampling = false;
        await sampler;
      }
      expect(peakRows).toBe(2);
      expect(peakSlots).toBeLessThanOrEqual(2);
      const workerOwners = workers.map((w) => w.ctx.get(InvocationExecutor).owner);
      expect([...owners].every((o) => workerOwners.includes(o))).toBe(true);
      // Every run released its slot, and none is left waiting: the sets are gone (Redis deletes an empty sorted set).
      expect(await redis.exists(slotKey('acct'), slotKey('other'), `${cluster.keyPrefix}run-waiting:acct`)).toBe(0);
      for (const w of workers) await w.close();
    }, 60_000);

    it("a worker that dies holding the account's slots: they expire runLeaseMs after its last refresh, and the account's next run goes ahead on the other worker", async () => {
      // The dying worker reaches Redis through a proxy the test cuts: from Redis's side, a worker that vanished.
      const proxy = new TcpProxy('127.0.0.1', redisPort());
      await proxy.open();
      const dying = await cluster.startWorker({ redis: { url: proxy.url('redis'), keyPrefix: cluster.keyPrefix } });
      try {
        const dyingOwner = dying.ctx.get(InvocationExecutor).owner;
        const held = [await startRun(slow, { ms: 30_000 }), await startRun(slow, { ms: 30_000 })];
        await until(
          async () => (await runningOf('acct')).filter((o) => o === dyingOwner).length === 2,
          5000,
          'the dying worker to run both',
        );
        expect(await redis.zrange(slotKey('acct'), 0, -1)).toEqual(expect.arrayContaining(held));
        const next = await startRun(slow, { ms: 100 });
        // A worker took its job and was refused a slot: the run is listed as waiting, and stays queued.
        await until(async () => (await redis.zscore(`${cluster.keyPrefix}run-waiting:acct`, next)) !== null, 5000, 'next refused a slot');
        expect((await row(next)).status).toBe('queued'); // the dying worker has free worker slots, but A has none

        const live = await cluster.startWorker();
        await proxy.cut();
        const cutAt = performance.now();
        // Its last refresh was at most LEASE_MS / 3 before the cut, so its slots hold for LEASE_MS * 2/3 more.
        // A pause on purpose: the slots expire on Redis's own clock, which no test controls.
        await sleep(LEASE_MS / 3);
        expect((await row(next)).status).toBe('queued');

        const answer = await syncWithin(slow, next, 15);
        const afterCut = performance.now() - cutAt;
        expect(answer.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '100' }] });
        expect((await row(next)).owner).toBe(live.ctx.get(InvocationExecutor).owner);
        expect(afterCut).toBeLessThan(LEASE_MS + 2500); // expiry, then at most one refusal delay (≤ 1.2 s)
        // The dead worker's runs: its BullMQ locks lapsed too, and the live worker settled them.
        await until(
          async () => (await row(held[0])).status === 'failed' && (await row(held[1])).status === 'failed',
          10_000,
          'the dead runs to be settled',
        );
        for (const id of held) expect(JSON.parse((await row(id)).error!)).toMatchObject({ code: 'interrupted' });
        expect(await redis.exists(slotKey('acct'))).toBe(0);
        await live.close();
      } finally {
        // A dead process is never closed; this one must be, to end the test. BullMQ 6.7's Worker.close()
        // does not resolve once its connection was cut, even after it is back (reproduced with a bare
        // BullMQ Worker), so its BullMQ worker is closed by force first; the rest closes as usual.
        await dying.ctx.get<BotRunner, { worker: { close(force: boolean): Promise<void> } }>(BotRunner).worker.close(true);
        await proxy.open();
        await dying.close();
        await proxy.cut();
      }
    }, 60_000);

    it('the slot scripts: take up to the cap, refuse past it and list the run as waiting, keep a run that holds one, drop expired slots, refresh held ones, hand a freed slot to the oldest waiting run; without Redis, runs go ahead, logged once', async () => {
      const logger = new Logger('test');
      const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
      jest.spyOn(logger, 'log').mockImplementation(() => undefined);
      const client = new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 500 });
      await until(() => client.status === 'ready', 2000, 'redis');
      const slots = new AccountRunSlots(client, cluster.keyPrefix, 2, 300, logger);
      const key = slotKey('script');
      const waitingKey = `${cluster.keyPrefix}run-waiting:script`;
      const TAKEN = { taken: true };
      try {
        expect(await slots.take('script', 'r1')).toEqual(TAKEN);
        expect(await slots.take('script', 'r2')).toEqual(TAKEN);
        expect(await slots.take('script', 'r3')).toEqual({ taken: false, waiting: 1 });
        expect(await slots.take('script', 'r4')).toEqual({ taken: false, waiting: 2 });
        expect(await slots.take('script', 'r3')).toEqual({ taken: false, waiting: 2 }); // listed once, keeps its place
        expect(await slots.take('script', 'r1')).toEqual(TAKEN); // already holds one: kept, not a third
        expect(await client.zcard(key)).toBe(2);
        // A freed slot goes to the oldest waiting run, taken off the list.
        expect(await slots.release('script', 'r1')).toBe('r3');
        expect(await client.zrange(waitingKey, 0, -1)).toEqual(['r4']);
        expect(await slots.take('script', 'r3')).toEqual(TAKEN);
        expect(await slots.nextWaiting('script')).toBeNull(); // no free slot: r4 stays listed
        // Refreshed slots outlive their first expiry (pauses on purpose: slots expire on Redis's own clock).
        for (let i = 0; i < 5; i++) {
          await sleep(100);
          await slots.refresh();
        }
        expect(await slots.take('script', 'r4')).toEqual({ taken: false, waiting: 1 });
        // A waiting run that will not start (cancelled) leaves the list, and the next one is answered when a slot is free.
        expect(await slots.take('script', 'r5')).toEqual({ taken: false, waiting: 2 });
        expect(await slots.forget('script', 'r4')).toBeNull(); // dropped; no free slot
        expect(await slots.release('script', 'r2')).toBe('r5');
        expect(await slots.release('script', 'r3')).toBeNull(); // nobody waiting
        // Slots not refreshed expire (a dead worker's): dropped by the next take.
        await client.zadd(key, 1, 'left-by-a-dead-worker');
        expect(await slots.take('script', 'r5')).toEqual(TAKEN);
        expect(await client.zrange(key, 0, -1)).toEqual(['r5']);
        const ttl = await client.pttl(key);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(300);
        expect(await slots.release('script', 'r5')).toBeNull();
        expect(await client.exists(key, waitingKey)).toBe(0);
      } finally {
        client.disconnect();
      }
      // Redis gone: the run goes ahead (availability over fairness), and the warning is written once.
      expect(await slots.take('script', 'r6')).toEqual(TAKEN);
      expect(await slots.take('script', 'r7')).toEqual(TAKEN);
      expect(await slots.release('script', 'r6')).toBeNull();
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0][0])).toMatch(/run slot/);
    });
  });
}
