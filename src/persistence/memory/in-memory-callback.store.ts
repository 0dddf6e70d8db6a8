import { CallbackStore, type DueDelivery, type NewCallback } from '../callback-store.js';
import type { AttemptResult, CallbackRecord, DeliveryRecord } from '../records.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { copyOf, type InMemoryWebhookDatabase, type StoredDelivery } from './in-memory-database.js';

/** A delivery as lists show it: a copy without the body and the claim. */
function toLogEntry({ owner: _owner, leaseExpiresAt: _lease, ...delivery }: StoredDelivery): DeliveryRecord {
  return { ...copyOf(delivery), body: '' };
}

function toDelivery({ owner: _owner, leaseExpiresAt: _lease, ...delivery }: StoredDelivery): DeliveryRecord {
  return copyOf(delivery);
}

const byCreation = (a: StoredDelivery, b: StoredDelivery) =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Due now and not held by a live sender. */
const claimable = (d: StoredDelivery, now: Date) =>
  d.status === 'pending' &&
  d.nextAttemptAt !== null &&
  d.nextAttemptAt.getTime() <= now.getTime() &&
  (d.owner === null || (d.leaseExpiresAt !== null && d.leaseExpiresAt.getTime() < now.getTime()));

/** `CallbackStore` on an `InMemoryWebhookDatabase`: deliveries join its units of work like the runs do. */
export class InMemoryCallbackStore extends CallbackStore {
  constructor(private readonly database: InMemoryWebhookDatabase) {
    super();
  }

  private get callbacks(): Map<string, CallbackRecord> {
    return this.database.callbacks;
  }

  private get deliveries(): Map<string, StoredDelivery> {
    return this.database.deliveries;
  }

  findCallback(triggerId: string, tx?: WebhookTransaction): Promise<CallbackRecord | null> {
    return this.database.read(tx, () => {
      const callback = this.callbacks.get(triggerId);
      return callback ? copyOf(callback) : null;
    });
  }

  saveCallback(callback: NewCallback, now: Date): Promise<void> {
    return this.database.write(undefined, () => {
      const createdAt = this.callbacks.get(callback.triggerId)?.createdAt ?? now;
      this.callbacks.set(callback.triggerId, {
        ...copyOf(callback),
        enabled: true,
        consecutiveFailures: 0,
        disabledReason: null,
        createdAt: new Date(createdAt.getTime()),
        updatedAt: new Date(now.getTime()),
      });
    });
  }

  replaceSecret(triggerId: string, secret: string, now: Date): Promise<boolean> {
    return this.changeCallback(triggerId, (c) => {
      c.secret = secret;
      c.updatedAt = new Date(now.getTime());
      return true;
    });
  }

  deleteCallback(triggerId: string): Promise<boolean> {
    return this.database.write(undefined, () => this.callbacks.delete(triggerId));
  }

  async resetFailures(triggerId: string): Promise<void> {
    await this.changeCallback(triggerId, (c) => {
      c.consecutiveFailures = 0;
      return true;
    });
  }

  async countFailure(triggerId: string): Promise<number | null> {
    let count: number | null = null;
    await this.changeCallback(triggerId, (c) => {
      count = ++c.consecutiveFailures;
      return true;
    });
    return count;
  }

  disable(triggerId: string, reason: string, now: Date): Promise<boolean> {
    return this.changeCallback(triggerId, (c) => {
      if (!c.enabled) return false;
      c.enabled = false;
      c.disabledReason = reason.slice(0, 500);
      c.updatedAt = new Date(now.getTime());
      return true;
    });
  }

  insertDelivery(delivery: DeliveryRecord, tx?: WebhookTransaction): Promise<void> {
    return this.database.write(tx, (unit) => {
      if (this.deliveries.has(delivery.id)) throw new Error(`Delivery ${delivery.id} already exists`);
      unit?.remember('deliveries', this.deliveries, delivery.id);
      // A new delivery has had no attempt, whatever the record says (as the SQL store inserts it).
      this.deliveries.set(delivery.id, {
        ...copyOf(delivery),
        lastAttemptAt: null,
        responseStatus: null,
        latencyMs: null,
        lastError: null,
        traceContext: delivery.traceContext ?? null,
        owner: null,
        leaseExpiresAt: null,
      });
    });
  }

  findDelivery(id: string): Promise<DeliveryRecord | null> {
    return this.database.read(undefined, () => {
      const delivery = this.deliveries.get(id);
      return delivery ? toDelivery(delivery) : null;
    });
  }

  claim(id: string, owner: string, now: Date, leaseExpiresAt: Date): Promise<DeliveryRecord | null> {
    return this.database.write(undefined, () => {
      const delivery = this.deliveries.get(id);
      if (!delivery || !claimable(delivery, now)) return null;
      delivery.owner = owner;
      delivery.leaseExpiresAt = new Date(leaseExpiresAt.getTime());
      return toDelivery(delivery);
    });
  }

  recordAttempt(id: string, owner: string, result: AttemptResult): Promise<boolean> {
    return this.database.write(undefined, () => {
      const delivery = this.deliveries.get(id);
      if (!delivery || delivery.owner !== owner || delivery.status !== 'pending') return false;
      Object.assign(delivery, {
        status: result.status,
        attempts: delivery.attempts + 1,
        lastAttemptAt: new Date(result.attemptedAt.getTime()),
        nextAttemptAt: result.nextAttemptAt ? new Date(result.nextAttemptAt.getTime()) : null,
        responseStatus: result.responseStatus,
        latencyMs: result.latencyMs,
        lastError: result.error?.slice(0, 1000) ?? null,
        owner: null,
        leaseExpiresAt: null,
      });
      return true;
    });
  }

  async abandon(id: string, owner: string, error: string): Promise<void> {
    await this.database.write(undefined, () => {
      const delivery = this.deliveries.get(id);
      if (!delivery || delivery.owner !== owner) return;
      Object.assign(delivery, {
        status: 'failed',
        nextAttemptAt: null,
        lastError: error.slice(0, 1000),
        owner: null,
        leaseExpiresAt: null,
      });
    });
  }

  redeliver(id: string, now: Date): Promise<boolean> {
    return this.database.write(undefined, () => {
      const delivery = this.deliveries.get(id);
      if (!delivery) return false;
      // The claim is left as it is: an attempt in flight keeps it, so no second sender starts the same delivery.
      delivery.status = 'pending';
      delivery.nextAttemptAt = new Date(now.getTime());
      return true;
    });
  }

  listDue(now: Date, limit: number, skipTriggers: readonly string[] = [], skipAccounts: readonly string[] = []): Promise<DueDelivery[]> {
    const skip = new Set(skipTriggers);
    const skipAccount = new Set(skipAccounts);
    const accountOf = (triggerId: string) => this.database.triggers.get(triggerId)?.accountId;
    return this.database.read(undefined, () =>
      [...this.deliveries.values()]
        .filter((d) => claimable(d, now) && !skip.has(d.triggerId) && !skipAccount.has(accountOf(d.triggerId) as string))
        .sort((a, b) => a.nextAttemptAt!.getTime() - b.nextAttemptAt!.getTime())
        .slice(0, limit)
        .map((d) => {
          const accountId = accountOf(d.triggerId);
          return accountId === undefined ? { id: d.id, triggerId: d.triggerId } : { id: d.id, triggerId: d.triggerId, accountId };
        }),
    );
  }

  deleteFinishedBefore(before: Date): Promise<number> {
    return this.database.write(undefined, () => {
      let deleted = 0;
      for (const [id, d] of this.deliveries) {
        if (d.createdAt.getTime() < before.getTime() && d.status !== 'pending' && this.deliveries.delete(id)) deleted++;
      }
      return deleted;
    });
  }

  listByTrigger(triggerId: string, limit: number): Promise<DeliveryRecord[]> {
    return this.database.read(undefined, () =>
      [...this.deliveries.values()]
        .filter((d) => d.triggerId === triggerId)
        .sort((a, b) => byCreation(b, a))
        .slice(0, limit)
        .map(toLogEntry),
    );
  }

  listByInvocation(invocationId: string, tx?: WebhookTransaction): Promise<DeliveryRecord[]> {
    return this.database.read(tx, () =>
      [...this.deliveries.values()]
        .filter((d) => d.invocationId === invocationId)
        .sort(byCreation)
        .map(toLogEntry),
    );
  }

  /** One conditional change of a callback, outside any unit; false when the trigger has none (or `change` says so). */
  private changeCallback(triggerId: string, change: (callback: CallbackRecord) => boolean): Promise<boolean> {
    return this.database.write(undefined, () => {
      const callback = this.callbacks.get(triggerId);
      return callback ? change(callback) : false;
    });
  }
}
