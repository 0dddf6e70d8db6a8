import { InMemoryClusterBus } from '../cluster/in-memory-cluster.bus.js';
import { newTriggerId } from '../keys/ids.js';
import { hashTriggerKey } from '../keys/trigger-keys.js';
import { triggerKeyRecord } from '../../test/fakes/trigger-keys.js';
import type { TriggerRecord } from '../persistence/records.js';
import { InMemoryWebhookDatabase } from '../persistence/memory/in-memory-database.js';
import { InMemoryTriggerRepository } from '../persistence/memory/in-memory-trigger.repository.js';
import { ManualClock } from '../time/manual-clock.js';
import { TRIGGER_CACHE_MAX_ENTRIES, TriggerCache } from './trigger-cache.js';

/** A trigger store that counts look-ups, and can hold one back to race it against a change. */
class CountingTriggerRepository extends InMemoryTriggerRepository {
  lookups = 0;
  gate?: Promise<void>;
  override async findActive(id: string): Promise<TriggerRecord | null> {
    this.lookups++;
    const found = await super.findActive(id);
    await this.gate;
    return found;
  }
}

/** The in-process bus, saying it reaches every process (as the Redis bus does while subscribed). */
class FleetBus extends InMemoryClusterBus {
  reachesAll = true;
  override get carriesTriggerChanges(): boolean {
    return this.reachesAll;
  }
  /** What the Redis bus does when its subscriber's connection closes or comes back. */
  lostTouch(): void {
    this.notifyTriggerChanged(null);
  }
}

class SmallTriggerCache extends TriggerCache {
  protected override readonly maxEntries = 3;
}

const trigger = (key = 'whk_a'): TriggerRecord => {
  const id = newTriggerId();
  return {
    id,
    botId: 'echo',
    accountId: 'acct',
    name: 'echo',
    type: 'webhook',
    keys: [triggerKeyRecord(id, key, { createdAt: new Date(1) })],
    createdAt: new Date(),
  };
};

/** The hashes of a trigger's keys that were not revoked. */
const hashes = (found: TriggerRecord | null) => found?.keys.map((k) => k.keyHash);

/** A rotation with no grace: `key` is added, the trigger's other keys end now. */
const rotate = (repository: InMemoryTriggerRepository, triggerId: string, key: string) =>
  repository.addKey(triggerKeyRecord(triggerId, key, { createdAt: new Date(2) }), {
    now: new Date(),
    maxUsable: 10,
    othersExpireAt: new Date(),
  });

describe('TriggerCache', () => {
  let repository: CountingTriggerRepository;
  let bus: FleetBus;
  let cache: TriggerCache;
  let t: TriggerRecord;
  let clock: ManualClock;

  beforeEach(async () => {
    clock = new ManualClock(1_000_000);
    repository = new CountingTriggerRepository(new InMemoryWebhookDatabase());
    bus = new FleetBus();
    cache = new TriggerCache(repository, bus, clock, { triggerCacheTtlMs: 30_000 });
    t = trigger();
    await repository.create(t);
  });
  afterEach(() => {
    cache.onModuleDestroy();
    jest.restoreAllMocks();
  });

  it('reads a trigger once, then answers from its copy until the TTL runs out', async () => {
    expect(TRIGGER_CACHE_MAX_ENTRIES).toBe(10_000);
    expect(await cache.findActive(t.id)).toEqual(t);
    expect(await cache.findActive(t.id)).toEqual(t);
    clock.advance(29_999);
    expect(await cache.findActive(t.id)).toEqual(t);
    expect(repository.lookups).toBe(1);
    clock.advance(1); // 30 s after the read
    expect(await cache.findActive(t.id)).toEqual(t);
    expect(repository.lookups).toBe(2);
  });

  it('keeps no "no such trigger": a trigger created after a miss is found at once', async () => {
    const later = trigger();
    expect(await cache.findActive(later.id)).toBeNull();
    await repository.create(later);
    expect(await cache.findActive(later.id)).toEqual(later);
    expect(cache.size).toBe(1);
  });

  it('drops a trigger announced as changed, and everything on null', async () => {
    const other = trigger();
    await repository.create(other);
    await cache.findActive(t.id);
    await cache.findActive(other.id);
    await rotate(repository, t.id, 'whk_b');
    await bus.announceTriggerChanged(t.id);
    expect(hashes(await cache.findActive(t.id))).toEqual([hashTriggerKey('whk_a'), hashTriggerKey('whk_b')]);
    expect(repository.lookups).toBe(3);
    await repository.delete(t.id);
    await bus.announceTriggerChanged(t.id);
    expect(await cache.findActive(t.id)).toBeNull();
    expect(cache.size).toBe(1); // the other trigger only
    bus.lostTouch();
    expect(cache.size).toBe(0);
  });

  it('does not keep what a read that raced a change returned (the old key must not live on)', async () => {
    let release!: () => void;
    repository.gate = new Promise((resolve) => (release = resolve));
    const reading = cache.findActive(t.id); // reads the row before the rotation...
    await new Promise((resolve) => setImmediate(resolve));
    await rotate(repository, t.id, 'whk_b');
    await bus.announceTriggerChanged(t.id); // ...and the news arrives while it is in flight
    release();
    repository.gate = undefined;
    expect(hashes(await reading)).toEqual([hashTriggerKey('whk_a')]);
    expect(cache.size).toBe(0);
    expect(hashes(await cache.findActive(t.id))).toEqual([hashTriggerKey('whk_a'), hashTriggerKey('whk_b')]);
  });

  it('keeps at most maxEntries, dropping the least recently used', async () => {
    const small = new SmallTriggerCache(repository, bus, clock, { triggerCacheTtlMs: 30_000 });
    const [a, b, c, d] = [t, trigger(), trigger(), trigger()];
    for (const x of [b, c, d]) await repository.create(x);
    await small.findActive(a.id);
    await small.findActive(b.id);
    await small.findActive(c.id);
    await small.findActive(a.id); // a is used again: b is now the oldest
    await small.findActive(d.id);
    expect(small.size).toBe(3);
    repository.lookups = 0;
    await small.findActive(a.id);
    await small.findActive(c.id);
    await small.findActive(d.id);
    expect(repository.lookups).toBe(0);
    await small.findActive(b.id);
    expect(repository.lookups).toBe(1);
    small.onModuleDestroy();
  });

  it('reads every time when the bus does not reach every process, or with a TTL of 0', async () => {
    bus.reachesAll = false;
    await cache.findActive(t.id);
    await cache.findActive(t.id);
    expect(repository.lookups).toBe(2);
    expect(cache.size).toBe(0);

    bus.reachesAll = true;
    const off = new TriggerCache(repository, bus, clock, { triggerCacheTtlMs: 0 });
    await off.findActive(t.id);
    await off.findActive(t.id);
    expect(repository.lookups).toBe(4);
    expect(off.enabled).toBe(false);
    off.onModuleDestroy();
  });

  it('is not used with a bus of the host that keeps the defaults (it may reach other processes unheard)', () => {
    class HostBus extends InMemoryClusterBus {}
    const c = new TriggerCache(repository, new HostBus(), clock, { triggerCacheTtlMs: 30_000 });
    expect(c.enabled).toBe(false);
    c.onModuleDestroy();
  });

  it("with the module's in-memory bus (one process) keeps a look-up 1 s at most, and hears this process's changes", async () => {
    const local = new InMemoryClusterBus();
    const c = new TriggerCache(repository, local, clock, { triggerCacheTtlMs: 30_000 });
    expect(c.enabled).toBe(true);
    const before = repository.lookups;
    await c.findActive(t.id);
    clock.advance(999);
    await c.findActive(t.id);
    expect(repository.lookups).toBe(before + 1);
    clock.advance(1);
    await c.findActive(t.id); // a script in another process may have rotated the key: read again
    expect(repository.lookups).toBe(before + 2);
    await local.announceTriggerChanged(t.id);
    await c.findActive(t.id);
    expect(repository.lookups).toBe(before + 3);
    c.onModuleDestroy();
  });

  it('hands out a frozen record, so no request can change it for the others', async () => {
    await cache.findActive(t.id);
    const kept = await cache.findActive(t.id);
    expect(Object.isFrozen(kept)).toBe(true);
  });

  it('stops listening to the bus when the module is destroyed', async () => {
    await cache.findActive(t.id);
    cache.onModuleDestroy();
    const spy = jest.spyOn(cache, 'evict');
    await bus.announceTriggerChanged(t.id);
    expect(spy).not.toHaveBeenCalled();
  });
});
