import { ManualClock, rateLimitStorageOn } from '../../test/fakes/manual-clock.js';
import { InMemoryRateLimitStorage } from './in-memory-rate-limit.storage.js';

describe('InMemoryRateLimitStorage', () => {
  let storage: InMemoryRateLimitStorage;
  let clock: ManualClock;
  /** One request at time `t` (ms): true when accepted. */
  const hit = async (t: number, key = 'k', ttl = 1000, limit = 2) => {
    clock.set(t);
    return !(await storage.increment(key, ttl, limit)).isBlocked;
  };

  beforeEach(() => {
    clock = new ManualClock();
    storage = new (rateLimitStorageOn(clock))();
  });
  afterEach(() => storage.onModuleDestroy());

  it('accepts exactly `limit` requests in a window', async () => {
    const results = [];
    for (let i = 0; i < 15; i++) results.push(await hit(i, 'k', 1000, 10));
    expect(results.filter(Boolean)).toHaveLength(10);
    expect(results.slice(0, 10).every(Boolean)).toBe(true);
  });

  it('slides: a request counts for exactly `ttl` ms after it was accepted, not until a fixed window edge', async () => {
    expect(await hit(0)).toBe(true);
    expect(await hit(900)).toBe(true);
    expect(await hit(950)).toBe(false);
    expect(await hit(999)).toBe(false);
    expect(await hit(1001)).toBe(true); // the hit at 0 has left the window
    // A fixed window starting at 1000 would accept this one too; the hit at 900 still counts here.
    expect(await hit(1002)).toBe(false);
    expect(await hit(1899)).toBe(false);
    expect(await hit(1900)).toBe(true);
  });

  it('does not count refused requests, so hammering does not extend the block', async () => {
    expect(await hit(0, 'k', 1000, 1)).toBe(true);
    for (let t = 10; t < 1000; t += 10) expect(await hit(t, 'k', 1000, 1)).toBe(false);
    expect(await hit(1000, 'k', 1000, 1)).toBe(true);
  });

  it('reports how many whole seconds to wait (Retry-After), at least 1', async () => {
    clock.set(0);
    await storage.increment('k', 60_000, 1);
    clock.set(1_000);
    const blocked = await storage.increment('k', 60_000, 1);
    expect(blocked).toMatchObject({ isBlocked: true, timeToBlockExpire: 59, totalHits: 2 });
    clock.set(59_500);
    expect((await storage.increment('k', 60_000, 1)).timeToBlockExpire).toBe(1);
    clock.set(59_999);
    expect((await storage.increment('k', 60_000, 1)).timeToBlockExpire).toBe(1);
    clock.set(60_000);
    expect(await storage.increment('k', 60_000, 1)).toMatchObject({ isBlocked: false, totalHits: 1, timeToBlockExpire: 0 });
  });

  it('checkFailures counts only failures and, once `limit` are in the window, refuses without counting', async () => {
    clock.set(0);
    expect(await storage.checkFailures('k', 60_000, 2, false)).toBe(0); // a right key counts nothing
    expect(await storage.checkFailures('k', 60_000, 2, true)).toBe(0);
    clock.set(1_000);
    expect(await storage.checkFailures('k', 60_000, 2, false)).toBe(0);
    expect(await storage.checkFailures('k', 60_000, 2, true)).toBe(0); // the second failure: still answered
    clock.set(30_500);
    expect(await storage.checkFailures('k', 60_000, 2, false)).toBe(30); // full: even a right key waits
    expect(await storage.checkFailures('k', 60_000, 2, true)).toBe(30); // and a refused one is not counted
    clock.set(60_000);
    expect(await storage.checkFailures('k', 60_000, 2, true)).toBe(0); // the failure at 0 left the window
    expect(await storage.checkFailures('k', 60_000, 2, true)).toBe(1); // full again until 61_000
  });

  it('checkFailures is exact under concurrency: of 1,000 failures at once, exactly `limit` are answered', async () => {
    const waits = await Promise.all(Array.from({ length: 1000 }, () => storage.checkFailures('ip', 60_000, 30, true)));
    expect(waits.filter((w) => w === 0)).toHaveLength(30);
    expect(waits.filter((w) => w === 60)).toHaveLength(970);
  });

  describe('admit', () => {
    const failures = { key: 'failed-key:ip', ttl: 60_000, limit: 2 };
    const limits = (triggerLimit = 5, accountLimit = 3) => [
      { name: 'trigger' as const, key: 'trigger:a', ttl: 10_000, limit: triggerLimit },
      { name: 'account' as const, key: 'account:x', ttl: 1_000, limit: accountLimit },
    ];

    it('counts a hit in every limit when all accept', async () => {
      clock.set(0);
      expect(await storage.admit({ failures, limits: limits() })).toEqual({ refusedBy: null, retryAfterSeconds: 0 });
      expect((await storage.increment('trigger:a', 10_000, 5)).totalHits).toBe(2);
      expect((await storage.increment('account:x', 1_000, 3)).totalHits).toBe(2);
    });

    it("a refusal by the account counts nothing in the trigger's limit, and the reverse", async () => {
      clock.set(0);
      for (let i = 0; i < 3; i++) expect((await storage.admit({ limits: limits() })).refusedBy).toBeNull();
      clock.set(400);
      for (let i = 0; i < 10; i++)
        expect(await storage.admit({ limits: limits() })).toEqual({ refusedBy: 'account', retryAfterSeconds: 1 });
      clock.set(1_000); // the account's window frees; the trigger holds exactly its 3 accepted hits
      expect((await storage.admit({ limits: limits() })).refusedBy).toBeNull();
      expect((await storage.admit({ limits: limits() })).refusedBy).toBeNull();
      expect(await storage.admit({ limits: limits() })).toEqual({ refusedBy: 'trigger', retryAfterSeconds: 9 });
      // The trigger's refusals did not count in the account: it holds the 2 hits at 1_000, so one more fits.
      expect(await storage.admit({ limits: [limits()[1]] })).toEqual({ refusedBy: null, retryAfterSeconds: 0 });
      expect((await storage.admit({ limits: [limits()[1]] })).refusedBy).toBe('account');
    });

    it('refuses on failures at their limit (their Retry-After) before any limit, counting nothing', async () => {
      const long = [
        { name: 'trigger', key: 'trigger:long', ttl: 120_000, limit: 2 },
        { name: 'account', key: 'account:long', ttl: 120_000, limit: 3 },
      ];
      clock.set(0);
      await storage.checkFailures(failures.key, failures.ttl, failures.limit, true);
      expect((await storage.admit({ failures, limits: long })).refusedBy).toBeNull(); // one failure: still admitted
      clock.set(20_000);
      await storage.checkFailures(failures.key, failures.ttl, failures.limit, true);
      clock.set(30_500);
      for (let i = 0; i < 5; i++)
        expect(await storage.admit({ failures, limits: long })).toEqual({ refusedBy: 'failures', retryAfterSeconds: 30 });
      clock.set(60_000); // the failure at 0 has left; the limits hold only the hit at 0
      expect((await storage.admit({ failures, limits: long })).refusedBy).toBeNull();
      expect(await storage.admit({ failures, limits: long })).toEqual({ refusedBy: 'trigger', retryAfterSeconds: 60 });
      expect((await storage.admit({ limits: [long[1]] })).refusedBy).toBeNull(); // the account's third
      expect((await storage.admit({ limits: [long[1]] })).refusedBy).toBe('account');
    });

    it('is exact under concurrency: of 50 admits at once with a limit of 10, exactly 10 are admitted', async () => {
      const answers = await Promise.all(Array.from({ length: 50 }, () => storage.admit({ failures, limits: limits(10, 100) })));
      expect(answers.filter((a) => a.refusedBy === null)).toHaveLength(10);
      expect(answers.filter((a) => a.refusedBy === 'trigger' && a.retryAfterSeconds === 10)).toHaveLength(40);
      expect((await storage.increment('account:x', 1_000, 100)).totalHits).toBe(11);
    });
  });

  it('keeps keys apart', async () => {
    expect(await hit(0, 'trigger:a', 1000, 1)).toBe(true);
    expect(await hit(1, 'trigger:a', 1000, 1)).toBe(false);
    expect(await hit(2, 'trigger:b', 1000, 1)).toBe(true);
  });

  it('costs memory for the hits it sees, not for the size of the limit', async () => {
    const storage = new InMemoryRateLimitStorage();
    const before = process.memoryUsage().arrayBuffers;
    for (let i = 0; i < 1000; i++) expect((await storage.increment('generous', 1000, 1e9)).isBlocked).toBe(false);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(1024 * 1024);
    storage.onModuleDestroy();
  });
});
