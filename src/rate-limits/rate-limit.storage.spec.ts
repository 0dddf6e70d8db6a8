import { InMemoryRateLimitStorage } from './in-memory-rate-limit.storage.js';
import { RateLimitStorage } from './rate-limit.storage.js';
import { ManualClock, rateLimitStorageOn } from '../../test/fakes/manual-clock.js';

/** A host's storage written before `admit`: only the two abstract methods (here delegated to the in-process one). */
class HostStorage extends RateLimitStorage {
  readonly inner = new InMemoryRateLimitStorage();
  readonly calls: string[] = [];
  increment(...args: Parameters<RateLimitStorage['increment']>) {
    this.calls.push(`increment ${args[0]}`);
    return this.inner.increment(...args);
  }
  checkFailures(...args: Parameters<RateLimitStorage['checkFailures']>) {
    this.calls.push(`checkFailures ${args[0]} ${args[3]}`);
    return this.inner.checkFailures(...args);
  }
}

describe('RateLimitStorage.admit (the default, for storages without their own)', () => {
  let storage: HostStorage;
  const failures = { key: 'failed-key:ip', ttl: 60_000, limit: 1 };
  const limits = [
    { name: 'trigger', key: 'trigger:a', ttl: 60_000, limit: 2 },
    { name: 'account', key: 'account:x', ttl: 60_000, limit: 3 },
  ];

  beforeEach(() => (storage = new HostStorage()));
  afterEach(() => storage.inner.onModuleDestroy());

  it('checks the failures without counting one, then counts in each limit in turn', async () => {
    expect(await storage.admit({ failures, limits })).toEqual({ refusedBy: null, retryAfterSeconds: 0 });
    expect(storage.calls).toEqual(['checkFailures failed-key:ip false', 'increment trigger:a', 'increment account:x']);
    expect(await storage.admit({ failures, limits })).toEqual({ refusedBy: null, retryAfterSeconds: 0 });
    expect(await storage.admit({ failures, limits })).toEqual({ refusedBy: 'trigger', retryAfterSeconds: 60 });
  });

  it('answers a full failed-key window as refused by failures, with its Retry-After, and counts nothing', async () => {
    await storage.checkFailures(failures.key, failures.ttl, failures.limit, true);
    storage.calls.length = 0;
    expect(await storage.admit({ failures, limits })).toEqual({ refusedBy: 'failures', retryAfterSeconds: 60 });
    expect(storage.calls).toEqual(['checkFailures failed-key:ip false']);
  });
});

describe('RateLimitStorage.rememberOnce (a webhook-id seen once per window)', () => {
  const clock = new ManualClock(1_000);
  const StorageOnClock = rateLimitStorageOn(clock);
  /** The default, for a host's storage with no rememberOnce of its own: built on its `increment`. */
  class HostStorageOnClock extends HostStorage {
    override readonly inner = new StorageOnClock();
  }

  it.each([
    ['the in-process storage', () => new StorageOnClock()],
    ["a host's storage (the default on increment)", () => new HostStorageOnClock()],
  ])('%s: true the first time, false while remembered, true again once the window has passed; keys apart', async (_name, make) => {
    const storage = make();
    clock.set(1_000);
    expect(await storage.rememberOnce('signed:trg_a:msg_1', 300_000)).toBe(true);
    expect(await storage.rememberOnce('signed:trg_a:msg_1', 300_000)).toBe(false);
    expect(await storage.rememberOnce('signed:trg_b:msg_1', 300_000)).toBe(true);
    clock.advance(299_999);
    expect(await storage.rememberOnce('signed:trg_a:msg_1', 300_000)).toBe(false);
    clock.advance(1);
    expect(await storage.rememberOnce('signed:trg_a:msg_1', 300_000)).toBe(true);
    (storage instanceof HostStorage ? storage.inner : storage).onModuleDestroy();
  });

  it('the in-process storage forgets a key at once; the other keys stay remembered', async () => {
    const storage = new StorageOnClock();
    expect(await storage.rememberOnce('signed:trg_a:msg_1', 300_000)).toBe(true);
    expect(await storage.rememberOnce('signed:trg_a:msg_2', 300_000)).toBe(true);
    await storage.forget('signed:trg_a:msg_1');
    expect(await storage.rememberOnce('signed:trg_a:msg_1', 300_000)).toBe(true);
    expect(await storage.rememberOnce('signed:trg_a:msg_2', 300_000)).toBe(false);
    storage.onModuleDestroy();
  });

  it("a host's storage written before forget keeps the key until its window ends (the default forgets nothing)", async () => {
    const storage = new HostStorageOnClock();
    clock.set(1_000);
    expect(await storage.rememberOnce('signed:trg_a:msg_1', 300_000)).toBe(true);
    await storage.forget('signed:trg_a:msg_1');
    expect(await storage.rememberOnce('signed:trg_a:msg_1', 300_000)).toBe(false);
    storage.inner.onModuleDestroy();
  });
});
