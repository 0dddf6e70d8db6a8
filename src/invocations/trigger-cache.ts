import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { ClusterBus } from '../cluster/cluster-bus.js';
import { TriggerChangeCache } from '../cluster/trigger-change-cache.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import type { TriggerRecord } from '../persistence/records.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';
import { Clock } from '../time/clock.js';

/** Most triggers one process keeps; past it the least recently used goes. */
export const TRIGGER_CACHE_MAX_ENTRIES = 10_000;

/**
 * This process's copy of trigger look-ups (id → trigger), so a trigger request does not read its trigger
 * row every time. Used by `TriggerKeyGuard`; the `TriggerRepository` contract is unchanged, so a host's
 * own repository is cached the same way.
 *
 * - Only found triggers are kept, never "no such trigger": a trigger created anywhere (by the admin
 *   service, or by a host's own code that announces nothing) is found at once on every node, and requests
 *   for made-up ids cannot push real triggers out.
 * - A trigger is dropped when the cluster bus says it changed (`announceTriggerChanged`, called by the
 *   admin service after every create, key rotation and delete, heard by every process the bus reaches),
 *   and everything is dropped when the bus says it may have missed something (`null`, e.g. after Redis
 *   reconnects). `triggerCacheTtlMs` is the safety net for an announcement that never arrived.
 * - Kept `triggerCacheTtlMs` while `ClusterBus.carriesTriggerChanges` is true (RedisClusterBus while
 *   subscribed). With the module's in-memory bus (one process) kept `ONE_PROCESS_TTL_MS` at most: a
 *   change made by another process sharing the database (a script) is seen within it. With a bus of the
 *   host's that does not carry them, another process would go on accepting a rotated key, so every
 *   look-up reads the repository, as without a cache.
 * - Bounded: a Map kept in order of use (a hit is re-inserted at the end), the oldest dropped past
 *   `TRIGGER_CACHE_MAX_ENTRIES`.
 * The mechanics are `TriggerChangeCache`'s (cluster/), shared with the callback's events (CallbackOutbox).
 */
@Injectable()
export class TriggerCache implements OnModuleDestroy {
  private readonly cache: TriggerChangeCache<TriggerRecord | null>;
  /** A field, not a constructor parameter (DI would look for it): tests lower it. */
  protected readonly maxEntries: number = TRIGGER_CACHE_MAX_ENTRIES;

  constructor(
    triggers: TriggerRepository,
    bus: ClusterBus,
    clock: Clock,
    @Inject(RESOLVED_OPTIONS) options: Pick<ResolvedWebhookTriggerOptions, 'triggerCacheTtlMs'>,
  ) {
    this.cache = new TriggerChangeCache(
      bus,
      clock,
      options.triggerCacheTtlMs,
      // Shared by every request that hits it: frozen, so nothing changes it for the others.
      async (id) => {
        const trigger = await triggers.findActive(id);
        return trigger && Object.freeze(trigger);
      },
      (trigger) => trigger !== null,
      () => this.maxEntries,
    );
  }

  /** Whether look-ups are kept now (see `TriggerChangeCache`). */
  get enabled(): boolean {
    return this.cache.enabled;
  }

  /** Number of triggers kept. */
  get size(): number {
    return this.cache.size;
  }

  /** The trigger, unless unknown or deleted: from this process's copy when it has a fresh one. */
  findActive(triggerId: string): Promise<TriggerRecord | null> {
    return this.cache.get(triggerId);
  }

  /** Drops one trigger (it changed). */
  evict(triggerId: string): void {
    this.cache.evict(triggerId);
  }

  /** Drops every trigger (changes may have been missed). */
  clear(): void {
    this.cache.clear();
  }

  onModuleDestroy(): void {
    this.cache.close();
  }
}
