import type { TriggerRecord } from '../records.js';
import { TriggerRepository } from '../trigger.repository.js';
import { copyOf, type InMemoryWebhookDatabase, type StoredTrigger } from './in-memory-database.js';

/** A copy without the store's own fields, so callers can never change the stored trigger by accident. */
function toRecord({ deletedAt: _deletedAt, ...trigger }: StoredTrigger): TriggerRecord {
  return copyOf({ ...trigger, allowedIps: trigger.allowedIps?.length ? trigger.allowedIps : undefined });
}

const oldestFirst = (a: StoredTrigger, b: StoredTrigger) =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** `TriggerRepository` on an `InMemoryWebhookDatabase`. Deleting marks the trigger; it is never removed. */
export class InMemoryTriggerRepository extends TriggerRepository {
  constructor(private readonly database: InMemoryWebhookDatabase) {
    super();
  }

  private get triggers(): Map<string, StoredTrigger> {
    return this.database.triggers;
  }

  async findActive(id: string): Promise<TriggerRecord | null> {
    const trigger = this.triggers.get(id);
    return trigger && !trigger.deletedAt ? toRecord(trigger) : null;
  }

  create(trigger: TriggerRecord): Promise<void> {
    return this.database.write(undefined, () => {
      if (this.triggers.has(trigger.id)) throw new Error(`Trigger ${trigger.id} already exists`);
      this.triggers.set(trigger.id, { ...copyOf(trigger), deletedAt: null });
    });
  }

  async listByBot(botId: string): Promise<TriggerRecord[]> {
    return [...this.triggers.values()]
      .filter((t) => t.botId === botId && !t.deletedAt)
      .sort(oldestFirst)
      .map(toRecord);
  }

  replaceKey(id: string, keyHash: string, keyCiphertext: string | null): Promise<boolean> {
    return this.database.write(undefined, () => {
      const trigger = this.triggers.get(id);
      if (!trigger || trigger.deletedAt) return false;
      trigger.keyHash = keyHash;
      trigger.keyCiphertext = keyCiphertext;
      return true;
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

  delete(id: string): Promise<boolean> {
    return this.database.write(undefined, () => {
      const trigger = this.triggers.get(id);
      if (!trigger || trigger.deletedAt) return false;
      trigger.deletedAt = new Date();
      return true;
    });
  }
}
