import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import type { ResolvedWebhookTriggerOptions } from '../../src/index.js';
import { RedisRateLimitStorage } from '../../src/redis/index.js';
import { WebhookTriggerModule, WebhookTriggersAdmin } from '../../src/index.js';
import { resolveWebhookTriggerOptions } from '../../src/options/resolve-options.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EchoBot, SlowBot } from '../fixtures/bots.js';
import { sleep, until } from '../helpers/http.js';
import { ShutdownState } from '../../src/lifecycle/shutdown.state.js';
import { createScratchDatabase, deleteRedisKeys, serviceUrl } from '../helpers/services.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');
const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

// The windows run on the Redis server's clock, which no test controls: the pauses below that wait a window out
// (or wait inside one) are on purpose, with margins of 50 ms or more.

/** Every key this run writes starts with it, so runs never see each other's hits and cleanup is exact. */
const keyPrefix = `webhook-test:${randomBytes(6).toString('hex')}:`;

if (!redisUrl) {
  it.todo('Redis suite NOT RUN: set WEBHOOK_TEST_REDIS_URL=redis://127.0.0.1:6379');
} else {
  afterAll(() => deleteRedisKeys(redisUrl, keyPrefix));

  describe('RedisRateLimitStorage (real Redis)', () => {
    const opened: RedisRateLimitStorage[] = [];
    /** One storage = one connection, like one API node. */
    const node = async (prefix = keyPrefix) => {
      const storage = new RedisRateLimitStorage({ redis: { url: redisUrl, keyPrefix: prefix } } as ResolvedWebhookTriggerOptions);
      await storage.onModuleInit();
      opened.push(storage);
      return storage;
    };
    let storage: RedisRateLimitStorage;
    let n = 0;
    /** A key no other test uses. */
    const freshKey = () => `trigger:t${++n}`;
    const hit = async (key: string, ttl = 500, limit = 3, s = storage) => !(await s.increment(key, ttl, limit, 0, 'trigger')).isBlocked;

    beforeAll(async () => {
      storage = await node();
    });
    afterAll(async () => {
      await Promise.all(opened.map((s) => s.onApplicationShutdown()));
    });

    it('refuses to start without the redis option, naming it (checked with the options, before anything connects)', () => {
      expect(() => resolveWebhookTriggerOptions({}, { rateLimitStorage: RedisRateLimitStorage })).toThrow(
        'WebhookTriggerModule: invalid option "redis": RedisRateLimitStorage (the "rateLimitStorage" extra) needs the "redis" option',
      );
    });

    it('stops the module at bootstrap when chosen without the redis option', async () => {
      const build = Test.createTestingModule({
        imports: [
          WebhookTriggerModule.forRoot({
            database: { type: 'better-sqlite3', database: ':memory:' },
            rateLimitStorage: RedisRateLimitStorage,
          }),
        ],
      }).compile();
      await expect(build).rejects.toThrow(/invalid option "redis"/);
    });

    it('fails at bootstrap when Redis cannot be reached', async () => {
      const s = new RedisRateLimitStorage({ redis: { url: 'redis://127.0.0.1:1', keyPrefix } } as ResolvedWebhookTriggerOptions);
      await expect(s.onModuleInit()).rejects.toThrow(/redis\.url/);
      await s.onApplicationShutdown();
    });

    it('accepts exactly `limit` hits in a window', async () => {
      const key = freshKey();
      const results = [];
      for (let i = 0; i < 6; i++) results.push(await hit(key));
      expect(results).toEqual([true, true, true, false, false, false]);
    });

    it('keeps its keys under the keyPrefix, expiring with the window', async () => {
      const key = freshKey();
      await hit(key);
      const redis = new Redis(redisUrl);
      const pttl = await redis.pttl(`${keyPrefix}rate:${key}`);
      await redis.quit();
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(500);
    });

    it('slides: a hit counts for `ttl` ms after it was accepted, not until a fixed window edge', async () => {
      const key = freshKey();
      const t0 = performance.now();
      const at = (ms: number) => sleep(Math.max(0, t0 + ms - performance.now()));
      expect(await hit(key, 600, 3)).toBe(true); // ~0
      await at(300);
      expect(await hit(key, 600, 3)).toBe(true); // ~300
      expect(await hit(key, 600, 3)).toBe(true); // ~300
      expect(await hit(key, 600, 3)).toBe(false);
      await at(720); // the hit at ~0 has left; those at ~300 count until ~900
      expect(await hit(key, 600, 3)).toBe(true);
      // A fixed 600 ms window starting at 600 would accept this one (and another): a sliding one does not.
      expect(await hit(key, 600, 3)).toBe(false);
      await at(1040); // both hits at ~300 have left
      expect(await hit(key, 600, 3)).toBe(true);
      expect(await hit(key, 600, 3)).toBe(true);
      expect(await hit(key, 600, 3)).toBe(false);
    });

    it('does not count refused hits, so hammering does not extend the block', async () => {
      const key = freshKey();
      const t0 = performance.now();
      expect(await hit(key, 500, 1)).toBe(true);
      let refused = 0;
      while (performance.now() - t0 < 400) {
        expect(await hit(key, 500, 1)).toBe(false);
        refused++;
        await sleep(10);
      }
      expect(refused).toBeGreaterThan(5);
      await sleep(Math.max(0, t0 + 560 - performance.now()));
      expect(await hit(key, 500, 1)).toBe(true);
    });

    it('answers Retry-After in whole seconds, at least 1, until the oldest counted hit leaves', async () => {
      const short = freshKey();
      await storage.increment(short, 500, 1, 0, 'trigger');
      expect(await storage.increment(short, 500, 1, 0, 'trigger')).toMatchObject({ isBlocked: true, totalHits: 2, timeToBlockExpire: 1 });

      const long = freshKey();
      expect(await storage.increment(long, 60_000, 1, 0, 'account')).toMatchObject({
        isBlocked: false,
        totalHits: 1,
        timeToBlockExpire: 0,
      });
      const blocked = await storage.increment(long, 60_000, 1, 0, 'account');
      expect(blocked.isBlocked).toBe(true);
      expect(blocked.timeToBlockExpire).toBeGreaterThanOrEqual(59);
      expect(blocked.timeToBlockExpire).toBeLessThanOrEqual(60);
    });

    it('checkFailures counts only failures, and once the window is full refuses every check without counting it', async () => {
      const key = freshKey();
      expect(await storage.checkFailures(key, 60_000, 2, false)).toBe(0); // a right key counts nothing
      expect(await storage.checkFailures(key, 60_000, 2, true)).toBe(0);
      expect(await storage.checkFailures(key, 60_000, 2, false)).toBe(0); // still one failure
      expect(await storage.checkFailures(key, 60_000, 2, true)).toBe(0);
      const wait = await storage.checkFailures(key, 60_000, 2, false); // full: even a right key waits
      expect(wait).toBeGreaterThanOrEqual(59);
      expect(wait).toBeLessThanOrEqual(60);
      expect(await storage.checkFailures(freshKey(), 500, 1, false)).toBe(0);
    });

    it('checkFailures is one atomic step across nodes: of 1,000 concurrent failures from two clients of Redis, exactly `limit` are answered', async () => {
      const key = freshKey();
      const other = await node(); // a second API node
      const waits = await Promise.all(
        Array.from({ length: 1000 }, (_, i) => (i % 2 ? storage : other).checkFailures(key, 60_000, 30, true)),
      );
      expect(waits.filter((w) => w === 0)).toHaveLength(30);
      expect(waits.filter((w) => w > 0)).toHaveLength(970);
    });

    it('reloads its script when Redis has forgotten it (SCRIPT FLUSH, a restart, a failover)', async () => {
      const key = freshKey();
      expect(await hit(key, 1000, 1)).toBe(true);
      const redis = new Redis(redisUrl);
      await redis.script('FLUSH');
      await redis.quit();
      expect(await hit(key, 1000, 1)).toBe(false);
      expect(await storage.checkFailures(key, 1000, 1, true)).toBe(1);
    });

    it('while Redis does not answer, counts in this process (same limit, fails nothing), and goes back to Redis once it answers', async () => {
      const proxy = new TcpProxy('127.0.0.1', Number(new URL(redisUrl).port || 6379));
      await proxy.open();
      const cut = new RedisRateLimitStorage({ redis: { url: proxy.url('redis'), keyPrefix } } as ResolvedWebhookTriggerOptions);
      await cut.onModuleInit();
      try {
        const key = freshKey();
        expect(await hit(key, 60_000, 3, cut)).toBe(true); // counted in Redis
        await proxy.cut();
        const t0 = Date.now();
        const during = await Promise.all(Array.from({ length: 5 }, () => hit(key, 60_000, 3, cut)));
        expect(Date.now() - t0).toBeLessThan(1500); // no request waits for Redis to come back
        expect(during.filter(Boolean)).toHaveLength(3); // the same limit, counted here
        await proxy.open();
        // Back on Redis (where the local window is already full, so a `true` can only come from Redis): the
        // one hit counted there before the outage plus two more fill its limit of 3.
        await until(() => hit(key, 60_000, 3, cut), 5000, 'Redis to count again');
        expect(await hit(key, 60_000, 3, cut)).toBe(true);
        expect(await hit(key, 60_000, 3, cut)).toBe(false);
        expect(await hit(key, 60_000, 3, storage)).toBe(false); // another node sees the same Redis window
      } finally {
        await cut.onApplicationShutdown();
        await proxy.cut();
      }
    });

    it('keeps keys (and keyPrefixes) apart', async () => {
      const key = freshKey();
      expect(await hit(key, 1000, 1)).toBe(true);
      expect(await hit(key, 1000, 1)).toBe(false);
      expect(await hit(freshKey(), 1000, 1)).toBe(true);
      const otherApp = await node(`${keyPrefix}other:`);
      expect(await hit(key, 1000, 1, otherApp)).toBe(true);
    });

    it('50 concurrent hits on one key from two nodes (two connections) → exactly `limit` accepted', async () => {
      const other = await node();
      const key = freshKey();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? storage : other).increment(key, 10_000, 10, 0, 'trigger')),
      );
      expect(results.filter((r) => !r.isBlocked)).toHaveLength(10);
      expect(results.filter((r) => r.isBlocked)).toHaveLength(40);
      expect(results.filter((r) => r.isBlocked).every((r) => r.timeToBlockExpire >= 1 && r.timeToBlockExpire <= 10)).toBe(true);
      expect(new Set(results.filter((r) => !r.isBlocked).map((r) => r.totalHits))).toEqual(new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
    });

    it('rememberOnce: one of 20 concurrent calls from two nodes wins; the key is forgotten after its ttl', async () => {
      const other = await node();
      const key = `signed:${freshKey()}:msg_1`;
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? storage : other).rememberOnce(key, 300)));
      expect(answers.filter(Boolean)).toHaveLength(1);
      await until(async () => (await storage.rememberOnce(key, 300)) === true, 3000);
    });

    it('forget: a key remembered on one node is forgotten for every node at once', async () => {
      const other = await node();
      const key = `signed:${freshKey()}:msg_1`;
      expect(await storage.rememberOnce(key, 600_000)).toBe(true);
      expect(await other.rememberOnce(key, 600_000)).toBe(false);
      await other.forget(key);
      expect(await storage.rememberOnce(key, 600_000)).toBe(true);
      expect(await other.rememberOnce(key, 600_000)).toBe(false);
    });

    describe('admit (the failed-key window, then every limit, in one script)', () => {
      /** A trigger and its account, under keys no other test uses. */
      const request = (triggerLimit: number, accountLimit: number, ttl = 60_000) => {
        const id = ++n;
        return {
          trigger: `trigger:admit${id}`,
          account: `account:admit${id}`,
          failures: { key: `failed-key:admit${id}`, ttl: 60_000, limit: 2 },
          limits: [
            { name: 'trigger', key: `trigger:admit${id}`, ttl, limit: triggerLimit },
            { name: 'account', key: `account:admit${id}`, ttl, limit: accountLimit },
          ],
        };
      };
      const hitsIn = async (key: string) => {
        const redis = new Redis(redisUrl);
        try {
          return await redis.zcard(`${keyPrefix}rate:${key}`);
        } finally {
          await redis.quit();
        }
      };

      it('counts one hit in every limit when all accept, expiring with each window', async () => {
        const r = request(5, 3);
        expect(await storage.admit(r)).toEqual({ refusedBy: null, retryAfterSeconds: 0 });
        expect(await storage.admit(r)).toEqual({ refusedBy: null, retryAfterSeconds: 0 });
        expect([await hitsIn(r.trigger), await hitsIn(r.account), await hitsIn(r.failures.key)]).toEqual([2, 2, 0]);
        const redis = new Redis(redisUrl);
        const pttl = await redis.pttl(`${keyPrefix}rate:${r.account}`);
        await redis.quit();
        expect(pttl).toBeGreaterThan(59_000);
        expect(pttl).toBeLessThanOrEqual(60_000);
      });

      it("a refusal by the account counts nothing in the trigger's limit, and the reverse", async () => {
        const a = request(5, 3);
        const b = { ...a, limits: [{ ...a.limits[0], key: `${a.trigger}b` }, a.limits[1]] }; // another trigger, same account
        for (let i = 0; i < 3; i++) expect((await storage.admit(b)).refusedBy).toBeNull();
        for (let i = 0; i < 10; i++) {
          const refused = await storage.admit(a);
          expect(refused.refusedBy).toBe('account');
          expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(59);
          expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
        }
        expect(await hitsIn(a.trigger)).toBe(0);

        const c = request(1, 100);
        expect((await storage.admit(c)).refusedBy).toBeNull();
        for (let i = 0; i < 10; i++) expect((await storage.admit(c)).refusedBy).toBe('trigger');
        expect(await hitsIn(c.account)).toBe(1);
      });

      it('refuses when the failed-key window is full, with its Retry-After, counting nothing anywhere', async () => {
        const r = request(5, 5);
        await storage.checkFailures(r.failures.key, r.failures.ttl, r.failures.limit, true);
        expect((await storage.admit(r)).refusedBy).toBeNull(); // one failure of 2: admitted
        await storage.checkFailures(r.failures.key, r.failures.ttl, r.failures.limit, true);
        const refused = await storage.admit(r);
        expect(refused.refusedBy).toBe('failures');
        expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(59);
        expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
        expect([await hitsIn(r.trigger), await hitsIn(r.account), await hitsIn(r.failures.key)]).toEqual([1, 1, 2]);
      });

      it('answers Retry-After until the oldest counted hit of the refusing limit leaves, at least 1 s', async () => {
        const r = request(1, 10, 500);
        expect((await storage.admit(r)).refusedBy).toBeNull();
        expect(await storage.admit(r)).toEqual({ refusedBy: 'trigger', retryAfterSeconds: 1 });
        await sleep(550);
        expect((await storage.admit(r)).refusedBy).toBeNull();
      });

      it('50 concurrent admits from two nodes, trigger limit 10 → exactly 10 admitted, counted once in the account', async () => {
        const other = await node();
        const r = request(10, 1000);
        const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? storage : other).admit(r)));
        expect(answers.filter((a) => a.refusedBy === null)).toHaveLength(10);
        expect(answers.filter((a) => a.refusedBy === 'trigger' && a.retryAfterSeconds >= 59 && a.retryAfterSeconds <= 60)).toHaveLength(40);
        expect([await hitsIn(r.trigger), await hitsIn(r.account)]).toEqual([10, 10]);
      });

      it('admissions that arrive together share one script call, each judged by its own windows in order', async () => {
        const a = request(5, 1000);
        const b = { ...a, limits: [{ ...a.limits[0], key: `${a.trigger}b`, limit: 100 }, a.limits[1]] }; // same account
        await storage.admit(request(5, 5)); // the script is loaded
        const watcher = new Redis(redisUrl);
        const monitor = await watcher.monitor();
        const seen: string[][] = [];
        monitor.on('monitor', (_time: string, args: string[], source: string) => source !== 'lua' && seen.push(args));
        try {
          const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => storage.admit(i % 2 ? a : b)));
          const marker = `${keyPrefix}marker:${randomBytes(4).toString('hex')}`;
          const probe = new Redis(redisUrl);
          await probe.exists(marker);
          await probe.quit();
          await until(() => seen.some((args) => args.includes(marker)), 5000, 'the marker to be monitored');
          const scripts = seen.filter((args) => args.some((x) => x === `${keyPrefix}rate:${a.trigger}`));
          expect(scripts.map((args) => args[0].toLowerCase())).toEqual(['evalsha']);
          const forA = answers.filter((_, i) => i % 2 === 1);
          expect(forA.filter((x) => x.refusedBy === null)).toHaveLength(5);
          expect(forA.filter((x) => x.refusedBy === 'trigger')).toHaveLength(15);
          expect(answers.filter((_, i) => i % 2 === 0).every((x) => x.refusedBy === null)).toBe(true);
          expect([await hitsIn(a.trigger), await hitsIn(b.limits[0].key), await hitsIn(a.account)]).toEqual([5, 20, 25]);
        } finally {
          monitor.disconnect();
          await watcher.quit().catch(() => undefined);
        }
      });

      it('reloads its script when Redis has forgotten it', async () => {
        const r = request(5, 5);
        await storage.admit(r); // the script is loaded
        await storage.admit(r);
        const redis = new Redis(redisUrl);
        await redis.script('FLUSH');
        await redis.quit();
        expect((await storage.admit(r)).refusedBy).toBeNull();
        expect([await hitsIn(r.trigger), await hitsIn(r.account)]).toEqual([3, 3]);
      });

      it('while Redis does not answer, admits in this process with the same limits', async () => {
        const proxy = new TcpProxy('127.0.0.1', Number(new URL(redisUrl).port || 6379));
        await proxy.open();
        const cut = new RedisRateLimitStorage({ redis: { url: proxy.url('redis'), keyPrefix } } as ResolvedWebhookTriggerOptions);
        await cut.onModuleInit();
        try {
          await proxy.cut();
          const r = request(2, 100);
          const answers = await Promise.all(Array.from({ length: 5 }, () => cut.admit(r)));
          expect(answers.filter((a) => a.refusedBy === null)).toHaveLength(2);
          expect(answers.filter((a) => a.refusedBy === 'trigger')).toHaveLength(3);
        } finally {
          await cut.onApplicationShutdown();
          await proxy.cut();
        }
      });
    });

    it("uses Redis's clock, so nodes with skewed clocks agree", async () => {
      const key = freshKey();
      expect(await hit(key, 1000, 1)).toBe(true);
      const spy = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 3_600_000); // this node is an hour ahead
      try {
        expect(await hit(key, 1000, 1)).toBe(false);
        expect(await storage.checkFailures(key, 1000, 1, false)).toBe(1);
      } finally {
        spy.mockRestore();
      }
    });
  });

  if (!postgresUrl) {
    it.todo('Redis rate limits across two API nodes NOT RUN: set WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test');
  } else {
    describe('two API nodes (two Nest apps, one PostgreSQL, one Redis)', () => {
      let db: { url: string; drop: () => Promise<void> };
      const apps: INestApplication[] = [];
      const urls: string[] = [];

      beforeAll(async () => {
        db = await createScratchDatabase(postgresUrl);
        for (let i = 0; i < 2; i++) {
          const moduleRef = await Test.createTestingModule({
            imports: [
              WebhookTriggerModule.forRoot({
                database: { type: 'postgres', url: db.url },
                redis: { url: redisUrl, keyPrefix },
                failedKeyLimit: { limit: 3, ttlMs: 60_000 },
                shutdownGraceMs: 0,
                rateLimitStorage: RedisRateLimitStorage,
              }),
            ],
            providers: [EchoBot],
          }).compile();
          const app = moduleRef.createNestApplication({ logger: false });
          await app.listen(0, '127.0.0.1');
          apps.push(app);
          urls.push((await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1'));
        }
      });

      afterAll(async () => {
        for (const app of apps) await app.close();
        await db?.drop();
      });

      const fire = (node: number, triggerId: string, key: string) =>
        fetch(`${urls[node]}/webhooks/${triggerId}/trigger`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-key': key },
          body: JSON.stringify({ text: 'hi' }),
        });

      it('15 requests at once on one trigger, spread over both nodes: exactly 10 succeed, 5 get 429 with Retry-After', async () => {
        const admin = apps[0].get(WebhookTriggersAdmin);
        await admin.setCredits('acct', 100);
        const t = await admin.createTrigger('echo', { name: 'shared-limit' });
        const responses = await Promise.all(Array.from({ length: 15 }, (_, i) => fire(i % 2, t.id, t.key)));
        const statuses = responses.map((r) => r.status);
        expect(statuses.filter((s) => s === 200)).toHaveLength(10);
        expect(statuses.filter((s) => s === 429)).toHaveLength(5);
        // 8 went to one node and 7 to the other: the 10 accepted were counted together, across both.
        expect(new Set(statuses.map((s, i) => (s === 200 ? i % 2 : -1)).filter((n) => n >= 0)).size).toBe(2);
        for (const r of responses.filter((r) => r.status === 429)) {
          const retryAfter = Number(r.headers.get('retry-after'));
          expect(Number.isInteger(retryAfter)).toBe(true);
          expect(retryAfter).toBeGreaterThanOrEqual(1);
          expect(retryAfter).toBeLessThanOrEqual(1);
        }
        await Promise.all(responses.map((r) => r.text()));
      });

      it('a request with the right key costs one Redis command for the failed-key check and both limits', async () => {
        const admin = apps[0].get(WebhookTriggersAdmin);
        const t = await admin.createTrigger('echo', { name: 'one-call' });
        await (await fire(0, t.id, t.key)).text(); // scripts loaded
        // MONITOR sees every command the server runs, in order; the marker, sent after the requests, ends the watch.
        const watcher = new Redis(redisUrl);
        const monitor = await watcher.monitor();
        const seen: string[][] = [];
        // A script's own commands are monitored too, from the source "lua": only what clients send counts.
        monitor.on('monitor', (_time: string, args: string[], source: string) => source !== 'lua' && seen.push(args));
        try {
          const marker = `${keyPrefix}marker:${randomBytes(4).toString('hex')}`;
          expect((await fire(0, t.id, t.key)).status).toBe(200);
          const probe = new Redis(redisUrl);
          await probe.exists(marker);
          await probe.quit();
          await until(() => seen.some((args) => args.includes(marker)), 5000, 'the marker to be monitored');
          const rateCommands = seen.filter((args) => args.some((a) => a.startsWith(`${keyPrefix}rate:`)));
          expect(rateCommands.map((args) => args[0].toLowerCase())).toEqual(['evalsha']);
          expect(rateCommands[0]).toEqual(
            expect.arrayContaining([
              expect.stringMatching(new RegExp(`^${keyPrefix}rate:failed-key:`)),
              `${keyPrefix}rate:trigger:${t.id}`,
              `${keyPrefix}rate:account:acct`,
            ]),
          );
        } finally {
          monitor.disconnect();
          await watcher.quit().catch(() => undefined);
        }
      });

      it('failed keys are counted per client IP across both nodes', async () => {
        const admin = apps[0].get(WebhookTriggersAdmin);
        const t = await admin.createTrigger('echo', { name: 'failed-keys' });
        expect((await fire(0, t.id, 'wrong')).status).toBe(401);
        expect((await fire(1, t.id, 'wrong')).status).toBe(401);
        expect((await fire(0, t.id, 'wrong')).status).toBe(401);
        const refused = await fire(1, t.id, t.key); // even the right key: the guesser must not learn it
        expect(refused.status).toBe(429);
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
      });
    });
  }

  describe('RedisRateLimitStorage during graceful shutdown', () => {
    it('stays connected through the grace, so a trigger then gets 503 (not 500) and a waiting sync 408', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'webhook-redis-shutdown-'));
      const moduleRef = await Test.createTestingModule({
        imports: [
          WebhookTriggerModule.forRoot({
            database: { type: 'better-sqlite3', database: join(dir, 'db.sqlite') },
            redis: { url: redisUrl, keyPrefix },
            rateLimitStorage: RedisRateLimitStorage,
            shutdownGraceMs: 2_000,
          }),
        ],
        providers: [SlowBot],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.listen(0, '127.0.0.1');
      const url = await app.getUrl();
      const admin = app.get(WebhookTriggersAdmin);
      await admin.setCredits('acct', 10);
      const t = await admin.createTrigger('slow', { name: 'grace' });
      const post = () =>
        fetch(`${url}/webhooks/${t.id}/trigger`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-key': t.key },
          body: '{"ms":800}',
        });
      const first = await post();
      expect(first.status).toBe(200);
      const { invocation } = (await first.json()) as { invocation: { id: string } };
      const statusOf = async () =>
        (
          (await (await fetch(`${url}/webhooks/${t.id}/trigger/invocation/${invocation.id}`, { headers: { 'x-key': t.key } })).json()) as {
            invocation: { status: string };
          }
        ).invocation.status;
      await until(async () => (await statusOf()) === 'running', 500, 'the run to start');
      const closing = app.close(); // the running 800 ms bot holds the grace open; the server still answers
      try {
        await until(() => app.get(ShutdownState).signal.aborted, 500, 'shutdown to begin');
        const during = await post();
        expect(during.status).toBe(503);
        expect(during.headers.get('retry-after')).toBe('1');
        expect(await during.json()).toMatchObject({ success: false, statusCode: 503 });
        const sync = await fetch(`${url}/webhooks/${t.id}/trigger/invocation/${invocation.id}/sync`, { headers: { 'x-key': t.key } });
        expect(sync.status).toBe(408);
        expect(await sync.json()).toMatchObject({ success: false, statusCode: 408, status: 'running' });
      } finally {
        await closing;
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
