import type { INestApplication } from '@nestjs/common';
import { EventEmitter2, EventEmitterModule } from '@nestjs/event-emitter';
import { Test } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import { RedisClusterBus } from '../../src/redis/redis-cluster.bus.js';
import { RedisClusterBus as ExportedRedisClusterBus } from '../../src/redis/index.js';
import {
  InvocationRepository,
  WebhookTriggerAdminModule,
  WebhookTriggerModule,
  WebhookTriggersAdmin,
  WEBHOOK_EVENTS,
  type InvocationEvent,
  type ResolvedWebhookTriggerOptions,
} from '../../src/index.js';
import { SlowBot } from '../fixtures/bots.js';
import { createScratchDatabase, serviceUrl } from '../helpers/services.js';
import { sleep, until } from '../helpers/http.js';
import { openStream } from '../helpers/event-stream.js';
import { ADMIN_TEST_TOKEN, TestAdminGuard } from '../fixtures/admin-guard.js';

const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');
const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

/** Fresh per run, so parallel runs (and other apps) on the same Redis never hear each other. */
const keyPrefix = `webhook-test-${randomBytes(6).toString('hex')}:`;
const channel = `${keyPrefix}invocation-finished`;
const triggerChannel = `${keyPrefix}trigger-changed`;
const wakeBoundMs = 50;

const busOn = (prefix = keyPrefix) =>
  new RedisClusterBus({ redis: { url: redisUrl!, keyPrefix: prefix } } as ResolvedWebhookTriggerOptions);

/** Resolves with performance.now() when the listener is called. */
const wokenAt = (bus: RedisClusterBus, id: string) => new Promise<number>((resolve) => bus.subscribe(id, () => resolve(performance.now())));

if (!redisUrl || !postgresUrl) {
  it.todo(
    'Redis bus suite NOT RUN: set WEBHOOK_TEST_REDIS_URL=redis://127.0.0.1:6379 and WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test',
  );
} else {
  describe('RedisClusterBus: two processes, one channel', () => {
    let a: RedisClusterBus;
    let b: RedisClusterBus;
    let monitor: Redis;

    beforeAll(async () => {
      a = busOn();
      b = busOn();
      await Promise.all([a.onModuleInit(), b.onModuleInit()]);
      monitor = new Redis(redisUrl);
    });
    afterAll(async () => {
      a?.onApplicationShutdown();
      b?.onApplicationShutdown();
      monitor?.disconnect();
    });

    it('is exported from the package', () => {
      expect(ExportedRedisClusterBus).toBe(RedisClusterBus);
    });

    it('a waiter on A is woken by a publish on B within milliseconds', async () => {
      const id = 'inv_cross_node_wakeup_00001';
      const woken = wokenAt(a, id);
      const other = jest.fn();
      a.subscribe('inv_someone_else_000000000', other);
      const sentAt = performance.now();
      await b.publish(id);
      const latency = (await woken) - sentAt;
      expect(latency).toBeLessThan(wakeBoundMs);
      expect(other).not.toHaveBeenCalled();
      expect(a.waitingIds).toBe(1); // only the other id is still waited for
      console.log(`[redis bus] publish on B → listener on A: ${latency.toFixed(2)} ms`);
    });

    it('subscribes once per process: one channel (and the trigger-changes one), one subscriber each, whatever the number of waiters', async () => {
      const unsubscribes = Array.from({ length: 100 }, (_, i) => a.subscribe(`inv_many_${i}`, () => undefined));
      try {
        const [, counts] = (await monitor.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
        expect(Number(counts)).toBe(2); // A and B
        const channels = (await monitor.call('PUBSUB', 'CHANNELS', `${keyPrefix}*`)) as string[];
        expect(channels.sort()).toEqual([channel, triggerChannel]);
      } finally {
        unsubscribes.forEach((u) => u());
      }
    });

    it('carries "trigger changed" to every process: at once to this one, within milliseconds to the other', async () => {
      const heardOnA: Array<string | null> = [];
      const heardOnB: Array<string | null> = [];
      const stopA = a.onTriggerChanged((id) => heardOnA.push(id));
      const stopB = b.onTriggerChanged((id) => heardOnB.push(id));
      try {
        expect(a.carriesTriggerChanges).toBe(true);
        const sent = b.announceTriggerChanged('trg_changed_00000000000000');
        expect(heardOnB).toEqual(['trg_changed_00000000000000']); // before any round trip
        await sent;
        await until(() => heardOnA.length > 0, 1_000, 'A heard it');
        expect(heardOnA).toEqual(['trg_changed_00000000000000']);
      } finally {
        stopA();
        stopB();
      }
    });

    it('carries the id only, and wakes each listener once (local wake + echo)', async () => {
      const spy = new Redis(redisUrl);
      const messages: string[] = [];
      spy.on('message', (_ch: string, m: string) => messages.push(m));
      await spy.subscribe(channel);
      const id = 'inv_ids_only_0000000000000';
      const onA = jest.fn();
      const onB = jest.fn();
      a.subscribe(id, onA);
      b.subscribe(id, onB);
      await b.publish(id); // B's own listener is woken at once, before any round trip
      expect(onB).toHaveBeenCalledTimes(1);
      await until(() => onA.mock.calls.length === 1, 2_000, 'A to hear it');
      // Redis delivers a channel's messages in order: once B hears a later one, the echo of its own came back too.
      const later = 'inv_ids_only_later_0000000';
      const onLater = jest.fn();
      b.subscribe(later, onLater);
      await a.publish(later);
      await until(() => onLater.mock.calls.length === 1, 2_000, 'B to hear the later message');
      expect(onA).toHaveBeenCalledTimes(1);
      expect(onB).toHaveBeenCalledTimes(1);
      expect(messages).toEqual([id, later]);
      expect(a.waitingIds + b.waitingIds).toBe(1); // the id of the earlier test only
      spy.disconnect();
    });

    it('the runs finished in one turn go in one message, and every waiter of each is woken once on the other process', async () => {
      const spy = new Redis(redisUrl);
      const messages: string[] = [];
      spy.on('message', (_ch: string, m: string) => messages.push(m));
      await spy.subscribe(channel);
      const ids = Array.from({ length: 30 }, (_, i) => `inv_turn_${String(i).padStart(17, '0')}`);
      const onA = ids.map((id) => {
        const listener = jest.fn();
        a.subscribe(id, listener);
        return listener;
      });
      await Promise.all(ids.map((id) => b.publish(id)));
      await until(() => onA.every((l) => l.mock.calls.length > 0), 1_000, 'every waiter on A woken');
      await until(() => messages.length > 0, 1_000, 'the spy heard the message');
      expect(messages).toEqual([ids.join('\n')]);
      expect(onA.map((l) => l.mock.calls.length)).toEqual(ids.map(() => 1));
      spy.disconnect();
    });

    it('does not wake a listener that unsubscribed', async () => {
      const id = 'inv_unsubscribed_000000000';
      const gone = jest.fn();
      const unsubscribe = a.subscribe(id, gone);
      const staying = wokenAt(a, id);
      unsubscribe();
      await b.publish(id);
      await staying;
      expect(gone).not.toHaveBeenCalled();
    });

    it('hears nothing from another keyPrefix', async () => {
      const other = busOn(`${keyPrefix}other:`);
      await other.onModuleInit();
      const id = 'inv_other_prefix_000000000';
      const listener = jest.fn();
      a.subscribe(id, listener);
      await other.publish(id);
      // A message published after it on A's own prefix: once A hears that one, it would have heard the first.
      const later = 'inv_other_prefix_later_000';
      const onLater = jest.fn();
      a.subscribe(later, onLater);
      await b.publish(later);
      await until(() => onLater.mock.calls.length === 1, 2_000, 'A to hear its own prefix');
      expect(listener).not.toHaveBeenCalled();
      other.onApplicationShutdown();
    });

    it('carries run changes to a watcher on A from B, and B sends none while nobody watches', async () => {
      const change = (n: number) => ({ invocationId: `inv_change_${n}`, botId: 'echo', triggerId: 'trg_x', status: 'queued' as const });
      const changeChannel = `${keyPrefix}invocation-changed`;
      const sent: string[] = [];
      const spy = new Redis(redisUrl);
      await spy.subscribe(changeChannel);
      spy.on('message', (_channel: string, message: string) => sent.push(message));

      b.announce(change(0)); // nobody watches yet: nothing goes out
      const heard: string[] = [];
      const stop = a.watchChanges((c) => heard.push(c.invocationId));
      await until(
        async () => Number(((await monitor.call('PUBSUB', 'NUMSUB', changeChannel)) as [string, number])[1]) === 2,
        2_000,
        'A subscribed',
      );
      await sleep(50); // A's "watching" reaches B
      b.announce(change(1));
      await until(() => heard.includes('inv_change_1'), 2_000, 'the change on A');
      expect(heard).toEqual(['inv_change_1']);
      expect(sent.map((m) => JSON.parse(m).invocationId)).toEqual(['inv_change_1']);

      stop();
      expect(a.changeWatcherCount).toBe(0);
      await until(
        async () => Number(((await monitor.call('PUBSUB', 'NUMSUB', changeChannel)) as [string, number])[1]) === 1,
        2_000,
        'A unsubscribed',
      );
      spy.disconnect();
    });

    it('fails at bootstrap, naming the redis option, when Redis is unreachable', async () => {
      const unreachable = new RedisClusterBus({ redis: { url: 'redis://127.0.0.1:1', keyPrefix } } as ResolvedWebhookTriggerOptions);
      await expect(unreachable.onModuleInit()).rejects.toThrow(
        /RedisClusterBus could not connect to redis:\/\/127\.0\.0\.1:1 \(the "redis\.url" option\)/,
      );
    });

    it('refuses to start without the redis option, naming it', async () => {
      await expect(
        Test.createTestingModule({
          imports: [
            WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: ':memory:' }, clusterBus: RedisClusterBus }),
          ],
        }).compile(),
      ).rejects.toThrow('WebhookTriggerModule: invalid option "redis": RedisClusterBus (the "clusterBus" extra) needs the "redis" option');
    });
  });

  describe('sync on node A, run on node B (two apps, one PostgreSQL database, one Redis)', () => {
    let db: { url: string; drop: () => Promise<void> };
    const apps: INestApplication[] = [];
    let urlA: string;
    let urlB: string;
    let urlC: string;
    let admin: WebhookTriggersAdmin;
    let emitterB: EventEmitter2;
    let invocationsB: InvocationRepository;

    const start = async (opts: { bus: 'redis' | 'memory'; events?: boolean; syncTimeoutMs?: number; admin?: boolean }) => {
      const moduleRef = await Test.createTestingModule({
        imports: [
          ...(opts.admin ? [WebhookTriggerAdminModule.forRoot({ guards: [TestAdminGuard] })] : []),
          ...(opts.events ? [EventEmitterModule.forRoot()] : []),
          WebhookTriggerModule.forRoot({
            database: { type: 'postgres', url: db.url },
            redis: { url: redisUrl, keyPrefix },
            rateLimits: { perTrigger: { limit: 10_000, ttlMs: 1000 }, perAccount: { limit: 10_000, ttlMs: 60_000 } },
            syncTimeoutMs: opts.syncTimeoutMs ?? 300_000,
            shutdownGraceMs: 0,
            ...(opts.bus === 'redis' ? { clusterBus: RedisClusterBus } : {}),
          }),
        ],
        providers: [SlowBot],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.listen(0, '127.0.0.1');
      apps.push(app);
      return app;
    };

    beforeAll(async () => {
      db = await createScratchDatabase(postgresUrl);
      // A (waits): Redis bus and a huge sync wait, so only the bus can answer it early.
      const a = await start({ bus: 'redis', syncTimeoutMs: 2_000_000_000, admin: true });
      const b = await start({ bus: 'redis', events: true });
      // C (waits): in-memory bus, for contrast.
      const c = await start({ bus: 'memory' });
      [urlA, urlB, urlC] = await Promise.all([a.getUrl(), b.getUrl(), c.getUrl()]);
      admin = b.get(WebhookTriggersAdmin);
      emitterB = b.get(EventEmitter2);
      invocationsB = b.get(InvocationRepository);
      await admin.setCredits('acct', 100);
    });

    afterAll(async () => {
      for (const app of apps) await app.close();
      await db?.drop();
    });

    /** Triggers the slow bot through B (so it runs on B), then opens sync through `waitUrl` at once. */
    const crossNode = async (waitUrl: string, runMs: number, query = '') => {
      const t = await admin.createTrigger('slow', { name: `cross-${runMs}-${randomBytes(3).toString('hex')}` });
      const res = await fetch(`${urlB}/webhooks/${t.id}/trigger`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-key': t.key },
        body: JSON.stringify({ ms: runMs }),
      });
      expect(res.status).toBe(200);
      const { invocation } = (await res.json()) as { invocation: { id: string } };
      const finished = new Promise<number>((resolve) => {
        const onSucceeded = (event: InvocationEvent) => {
          if (event.invocationId !== invocation.id) return;
          emitterB.off(WEBHOOK_EVENTS.succeeded, onSucceeded);
          resolve(performance.now());
        };
        emitterB.on(WEBHOOK_EVENTS.succeeded, onSucceeded);
      });
      const askedAt = performance.now();
      const sync = await fetch(`${waitUrl}/webhooks/${t.id}/trigger/invocation/${invocation.id}/sync${query}`, {
        headers: { 'x-key': t.key },
      });
      const answeredAt = performance.now();
      const body = await sync.json();
      const finishedAt = await finished;
      const row = await invocationsB.findById(invocation.id);
      return {
        status: sync.status,
        body,
        askedAt,
        answeredAt,
        finishedAt,
        rowFinishedAt: row?.finishedAt,
        answeredWall: performance.timeOrigin + answeredAt,
      };
    };

    it("A's admin live stream shows a run that starts and finishes on B", async () => {
      const stream = await openStream(`${urlA}/admin/api/events?botId=slow`, { Authorization: `Bearer ${ADMIN_TEST_TOKEN}` });
      try {
        await sleep(100); // A's "watching" reaches B
        const t = await admin.createTrigger('slow', { name: `live-${randomBytes(3).toString('hex')}` });
        const res = await fetch(`${urlB}/webhooks/${t.id}/trigger`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-key': t.key },
          body: JSON.stringify({ ms: 50 }),
        });
        const { invocation } = (await res.json()) as { invocation: { id: string } };
        const events = await stream.until((all) => all.some((e) => e.invocationId === invocation.id && e.status === 'succeeded'));
        expect(events.filter((e) => e.invocationId === invocation.id).map((e) => e.status)).toEqual(['queued', 'running', 'succeeded']);
      } finally {
        stream.close();
      }
    });

    it('a sync waiting on A answers 200 within milliseconds of the run finishing on B', async () => {
      const r = await crossNode(urlA, 400);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '400' }] });
      expect(r.answeredAt - r.askedAt).toBeGreaterThan(300); // it really waited for the run
      const latency = r.answeredAt - r.finishedAt;
      expect(latency).toBeLessThan(wakeBoundMs);
      const sinceStored = r.rowFinishedAt ? (r.answeredWall - new Date(r.rowFinishedAt).getTime()).toFixed(1) : '?';
      console.log(
        `[redis bus] run finished on B (succeeded event) → sync answered on A: ${latency.toFixed(2)} ms; since the row's finishedAt: ${sinceStored} ms`,
      );
    });

    it('several waiters on A for runs on B are all answered', async () => {
      const results = await Promise.all([crossNode(urlA, 200), crossNode(urlA, 250), crossNode(urlA, 300)]);
      for (const r of results) {
        expect(r.status).toBe(200);
        expect(r.answeredAt - r.finishedAt).toBeLessThan(wakeBoundMs);
      }
    });

    it('contrast: with the in-memory bus, a sync on C is not woken by the run on B; only its own timeout answers it', async () => {
      const r = await crossNode(urlC, 200, '?timeout=2');
      // The waiter never polls: it learns of the finish only from its final re-read at the 2 s timeout.
      expect(r.answeredAt - r.finishedAt).toBeGreaterThan(1000);
      expect(r.answeredAt - r.askedAt).toBeGreaterThanOrEqual(1900);
      expect(r.status).toBe(200);
    });
  });
}
