import type { TriggerKeyRecord, TriggerRecord } from '../records.js';
import { type AddKeyOutcome, type AddKeyRules, TriggerRepository } from '../trigger.repository.js';
import { copyOf, type InMemoryWebhookDatabase, type StoredTrigger } from './in-memory-database.js';

const oldestFirst = (a: { createdAt: Date; id: string }, b: { createdAt: Date; id: string }) =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

const usableAt = (key: TriggerKeyRecord, now: Date) => key.revokedAt === null && (key.expiresAt === null || key.expiresAt > now);

/** `TriggerRepository` on an `InMemoryWebhookDatabase`. Deleting marks the trigger; it is never removed. */
export class InMemoryTriggerRepository extends TriggerRepository {
  constructor(private readonly database: InMemoryWebhookDatabase) {
    super();
  }

  private get triggers(): Map<string, StoredTrigger> {
    return this.database.triggers;
  }

  /** The trigger's keys not revoked, oldest first (the stored objects: copy before handing out). */
  private keysOf(triggerId: string): TriggerKeyRecord[] {
    return [...this.database.triggerKeys.values()].filter((k) => k.triggerId === triggerId && k.revokedAt === null).sort(oldestFirst);
  }

  /** A copy without the store's own fields, so callers can never change the stored trigger by accident. */
  private toRecord({ deletedAt: _deletedAt, ...trigger }: StoredTrigger): TriggerRecord {
    return {
      ...copyOf({ ...trigger, allowedIps: trigger.allowedIps?.length ? trigger.allowedIps : undefined }),
      keys: copyOf(this.keysOf(trigger.id)),
    };
  }

  private active(id: string): StoredTrigger | undefined {
    const trigger = this.triggers.get(id);
    return trigger && !trigger.deletedAt ? trigger : undefined;
  }

  async findActive(id: string): Promise<TriggerRecord | null> {
    const trigger = this.active(id);
    return trigger ? this.toRecord(trigger) : null;
  }

  create({ keys, ...trigger }: TriggerRecord): Promise<void> {
    return this.database.write(undefined, () => {
      if (this.triggers.has(trigger.id)) throw new Error(`Trigger ${trigger.id} already exists`);
      if (keys.some((k) => this.database.triggerKeys.has(k.id))) throw new Error(`A key of trigger ${trigger.id} already exists`);
      this.triggers.set(trigger.id, { ...copyOf(trigger), deletedAt: null });
      for (const key of keys) this.database.triggerKeys.set(key.id, { ...copyOf(key), triggerId: trigger.id });
    });
  }

  async listByBot(botId: string): Promise<TriggerRecord[]> {
    return [...this.triggers.values()]
      .filter((t) => t.botId === botId && !t.deletedAt)
      .sort(oldestFirst)
      .map((t) => this.toRecord(t));
  }

  addKey(key: TriggerKeyRecord, { now, maxUsable, othersExpireAt }: AddKeyRules): Promise<AddKeyOutcome> {
    return this.database.write(undefined, () => {
      if (!this.active(key.triggerId)) return 'unknown_trigger';
      if (this.database.triggerKeys.has(key.id)) throw new Error(`Key ${key.id} already exists`);
      const others = this.keysOf(key.triggerId).filter((k) => usableAt(k, now));
      const staying = othersExpireAt && othersExpireAt <= now ? 0 : others.length;
      if (staying + 1 > maxUsable) return 'too_many_keys';
      if (othersExpireAt) {
        for (const other of others) {
          if (other.expiresAt !== null && other.expiresAt <= othersExpireAt) continue;
          other.expiresAt = new Date(othersExpireAt.getTime());
          other.rotatedAt = new Date(now.getTime());
        }
      }
      this.database.triggerKeys.set(key.id, copyOf(key));
      return 'added';
    });
  }

  revokeKey(triggerId: string, keyId: string, at: Date): Promise<boolean> {
    return this.database.write(undefined, () => {
      const key = this.database.triggerKeys.get(keyId);
      if (!this.active(triggerId) || !key || key.triggerId !== triggerId || key.revokedAt !== null) return false;
      key.revokedAt = new Date(at.getTime());
      return true;
    });
  }

  recordKeyUses(uses: ReadonlyMap<string, Date>): Promise<void> {
    return this.database.write(undefined, () => {
      for (const [keyId, at] of uses) {
        const key = this.database.triggerKeys.get(keyId);
        if (key && (key.lastUsedAt === null || key.lastUsedAt < at)) key.lastUsedAt = new Date(at.getTime());
      }
    });
  }

  setAllowedIps(id: string, allowedIps: string[]): Promise<boolean> {
    return this.database.write(undefined, () => {
      const trigger = this.triggers.get(id);
      if (!trigger || trigger.deletedAt) return false;
      trigger.allowedIps = [...allowedIps];
      return true;
    });
  }

  assignBotAccount(botId: string, accountId: string): Promise<string[]> {
    return this.database.write(undefined, () => {
      const changed: string[] = [];
      for (const trigger of this.triggers.values()) {
        if (trigger.botId !== botId || trigger.accountId === accountId) continue;
        trigger.accountId = accountId;
        changed.push(trigger.id);
      }
      return changed;
    });
  }

  delete(id: string): Promise<boolean> {
    return this.database.write(undefined, () => {
      const trigger = this.triggers.get(id);
      if (!trigger || trigger.deletedAt) return false;
      trigger.deletedAt = new Date();
      return true;
    });
  }
}
