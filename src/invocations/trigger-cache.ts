import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { CompletionBus } from '../completion/completion-bus.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import type { TriggerRecord } from '../persistence/records.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';

/** Most triggers one process keeps; past it the least recently used goes. */
export const TRIGGER_CACHE_MAX_ENTRIES = 10_000;

interface Entry {
  trigger: TriggerRecord;
  expiresAt: number;
}

/**
 * This process's copy of trigger look-ups (id → trigger), so a trigger request does not read its trigger
 * row every time. Used by `TriggerKeyGuard`; the `TriggerRepository` contract is unchanged, so a host's
 * own repository is cached the same way.
 *
 * - Only found triggers are kept, never "no such trigger": a trigger created anywhere (by the admin
 *   service, or by a host's own code that announces nothing) is found at once on every node, and requests
 *   for made-up ids cannot push real triggers out.
 * - A trigger is dropped when the completion bus says it changed (`announceTriggerChanged`, called by the
 *   admin service after every create, key rotation and delete, heard by every process the bus reaches),
 *   and everything is dropped when the bus says it may have missed something (`null`, e.g. after Redis
 *   reconnects). `triggerCacheTtlMs` is the safety net for an announcement that never arrived.
 * - Used only while `CompletionBus.carriesTriggerChanges` is true (RedisCompletionBus while subscribed):
 *   with a bus that reaches this process only, another process sharing the database would go on
 *   accepting a rotated key, so every look-up reads the repository then, as without a cache.
 * - Bounded: a Map kept in order of use (a hit is re-inserted at the end), the oldest dropped past
 *   `TRIGGER_CACHE_MAX_ENTRIES`.
 */
@Injectable()
export class TriggerCache implements OnModuleDestroy {
  private readonly entries = new Map<string, Entry>();
  private readonly ttlMs: number;
  /**
   * Counts drops. A read that started before a drop may have read the row before the change: what it
   * read is answered but not kept (else a rotated key could live on here until the TTL).
   */
  private generation = 0;
  private readonly stopListening: () => void;
  /** A field, not a constructor parameter (DI would look for it): tests lower it. */
  protected readonly maxEntries: number = TRIGGER_CACHE_MAX_ENTRIES;

  constructor(
    private readonly triggers: TriggerRepository,
    private readonly bus: CompletionBus,
    @Inject(RESOLVED_OPTIONS) options: Pick<ResolvedWebhookTriggerOptions, 'triggerCacheTtlMs'>,
  ) {
    this.ttlMs = options.triggerCacheTtlMs;
    this.stopListening = bus.onTriggerChanged((triggerId) => (triggerId === null ? this.clear() : this.evict(triggerId)));
  }

  /** Whether look-ups are kept now (a TTL is set and the bus carries trigger changes to every process). */
  get enabled(): boolean {
    return this.ttlMs > 0 && this.bus.carriesTriggerChanges;
  }

  /** Number of triggers kept. */
  get size(): number {
    return this.entries.size;
  }

  /** The trigger, unless unknown or deleted: from this process's copy when it has a fresh one. */
  async findActive(triggerId: string): Promise<TriggerRecord | null> {
    if (!this.enabled) return this.triggers.findActive(triggerId);
    const startedAt = Date.now();
    const kept = this.entries.get(triggerId);
    if (kept) {
      this.entries.delete(triggerId);
      if (kept.expiresAt > startedAt) {
        this.entries.set(triggerId, kept);
        return kept.trigger;
      }
    }
    const generation = this.generation;
    const trigger = await this.triggers.findActive(triggerId);
    if (trigger && generation === this.generation && this.enabled) {
      // Shared by every request that hits it: frozen, so nothing changes it for the others.
      this.entries.set(triggerId, { trigger: Object.freeze(trigger), expiresAt: startedAt + this.ttlMs });
      if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    }
    return trigger;
  }

  /** Drops one trigger (it changed). */
  evict(triggerId: string): void {
    this.generation++;
    this.entries.delete(triggerId);
  }

  /** Drops every trigger (changes may have been missed). */
  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  onModuleDestroy(): void {
    this.stopListening();
    this.entries.clear();
  }
}
