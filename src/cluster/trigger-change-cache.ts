import { ClusterBus } from './cluster-bus.js';
import { InMemoryClusterBus } from './in-memory-cluster.bus.js';
import type { Clock } from '../time/clock.js';

/**
 * How long a value is kept with the in-memory bus: one process serves the app then (sync wake-ups need
 * it), and its own changes are heard at once; a change made by another process sharing the database (a
 * script using the admin service) is seen within this time.
 */
export const ONE_PROCESS_TTL_MS = 1000;

interface Entry<T> {
  /** The kept value, already settled: a hit hands it over without making a promise of its own. */
  value: Promise<T>;
  expiresAt: number;
}

/**
 * This process's copy of something read per trigger (the trigger itself, its callback's events), dropped
 * when the cluster bus says the trigger changed (`announceTriggerChanged`, heard by every process the
 * bus reaches), all of it when the bus says it may have missed something (`null`, e.g. after Redis
 * reconnects), and at `ttlMs` in any case (the safety net for an announcement that never arrived).
 * - Kept `ttlMs` while `ClusterBus.carriesTriggerChanges` is true (RedisClusterBus while subscribed);
 *   with the module's in-memory bus (one process) `ONE_PROCESS_TTL_MS` at most; with a bus of the host's
 *   that does not carry changes, never (another process would go on using what changed there).
 * - Only values `keep` accepts are kept (e.g. not "no such trigger", so a new trigger is found at once).
 * - A read that started before a drop answers what it read but does not keep it (it may predate the change).
 * - Bounded: a Map kept in order of use, the oldest dropped past `maxEntries`.
 */
export class TriggerChangeCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly oneProcess: boolean;
  /** Counts drops (see the class comment). */
  private generation = 0;
  private readonly stopListening: () => void;

  constructor(
    private readonly bus: ClusterBus,
    /** The module's clock: what the TTL is measured on. */
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly load: (triggerId: string) => Promise<T>,
    private readonly keep: (value: T) => boolean = () => true,
    /** Read at each insert, so a subclass field may lower it. */
    private readonly maxEntries: () => number = () => 10_000,
  ) {
    // The module's own in-memory bus, not a host's subclass of it (which may reach other processes).
    this.oneProcess = bus.constructor === InMemoryClusterBus;
    this.stopListening = bus.onTriggerChanged((triggerId) => (triggerId === null ? this.clear() : this.evict(triggerId)));
  }

  /** Whether values are kept now (see the class comment). */
  get enabled(): boolean {
    return this.ttlMs > 0 && (this.bus.carriesTriggerChanges || this.oneProcess);
  }

  get size(): number {
    return this.entries.size;
  }

  get(triggerId: string): Promise<T> {
    if (!this.enabled) return this.load(triggerId);
    const startedAt = this.clock.now();
    const kept = this.entries.get(triggerId);
    if (kept) {
      this.entries.delete(triggerId);
      if (kept.expiresAt > startedAt) {
        this.entries.set(triggerId, kept);
        return kept.value;
      }
    }
    return this.loadAndKeep(triggerId, startedAt);
  }

  private async loadAndKeep(triggerId: string, startedAt: number): Promise<T> {
    const generation = this.generation;
    const value = await this.load(triggerId);
    if (this.keep(value) && generation === this.generation && this.enabled) {
      const keptMs = this.bus.carriesTriggerChanges ? this.ttlMs : Math.min(this.ttlMs, ONE_PROCESS_TTL_MS);
      this.entries.set(triggerId, { value: Promise.resolve(value), expiresAt: startedAt + keptMs });
      if (this.entries.size > this.maxEntries()) this.entries.delete(this.entries.keys().next().value!);
    }
    return value;
  }

  /** Drops one trigger's value (it changed). */
  evict(triggerId: string): void {
    this.generation++;
    this.entries.delete(triggerId);
  }

  /** Drops everything (changes may have been missed). */
  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  close(): void {
    this.stopListening();
    this.entries.clear();
  }
}
