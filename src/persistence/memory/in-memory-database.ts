import type { AuditEntry } from '../audit-log.js';
import type { CallbackRecord, DeliveryRecord, InvocationRecord, SigningSecretRecord, TriggerKeyRecord, TriggerRecord } from '../records.js';
import type { WebhookTransaction } from '../unit-of-work.js';

/**
 * A deep copy of a record (plain objects, arrays, Dates), so no caller shares an object with the store.
 * Not `structuredClone`: under Jest it returns objects of another realm (`instanceof Date` fails).
 */
export function copyOf<T>(value: T): T {
  if (Object.prototype.toString.call(value) === '[object Date]') return new Date((value as Date).getTime()) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => copyOf(item)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, copyOf(item)])) as T;
  }
  return value;
}

/** An invocation as the in-memory store keeps it: the record plus its lease, which the contract never returns. */
export interface StoredInvocation extends InvocationRecord {
  owner: string | null;
  leaseExpiresAt: Date | null;
  attempts: number;
}

/** A trigger as the store keeps it (its keys apart): deleting one only marks it, its runs stay in history. */
export interface StoredTrigger extends Omit<TriggerRecord, 'keys'> {
  deletedAt: Date | null;
}

/** A delivery as the store keeps it: the record plus the sender's claim. */
export interface StoredDelivery extends DeliveryRecord {
  owner: string | null;
  leaseExpiresAt: Date | null;
}

/**
 * One open unit of work of an `InMemoryWebhookDatabase`. It keeps the before-image of every entry the
 * unit changed (the first time it changes it), so a failed unit puts exactly those entries back.
 */
export class InMemoryTransaction implements WebhookTransaction {
  readonly __webhookTransaction = true as const;
  private readonly undo: Array<() => void> = [];
  private readonly saved = new Set<string>();
  private open = true;

  constructor(readonly database: InMemoryWebhookDatabase) {}

  /** Records `map[key]` as it is now (or its absence), once per unit; call before changing it. */
  remember<V>(table: string, map: Map<string, V>, key: string): void {
    this.assertOpen();
    const id = `${table}\u0000${key}`;
    if (this.saved.has(id)) return;
    this.saved.add(id);
    const had = map.has(key);
    const before = had ? copyOf(map.get(key)!) : undefined;
    this.undo.push(() => (had ? map.set(key, before!) : map.delete(key)));
  }

  assertOpen(): void {
    if (!this.open) throw new Error('This in-memory transaction has already committed or rolled back');
  }

  /** @internal Called by `InMemoryUnitOfWork`. */
  commit(): void {
    this.open = false;
  }

  /** @internal Called by `InMemoryUnitOfWork`: puts back every entry the unit changed, newest change first. */
  rollback(): void {
    this.open = false;
    for (const undo of this.undo.reverse()) undo();
  }
}

/**
 * The state the in-memory stores share, and the one write lock they take turns on, as a database would
 * give them: a unit of work holds the lock from its first statement to its end, and a write made
 * outside a unit waits for it. So a failed unit can be undone exactly (nobody wrote in between), and two
 * units never see each other's uncommitted work.
 *
 * Reads never wait, so a read outside a unit may see a unit in progress (unlike the module's SQLite executor,
 * whose reads outside a unit go to a connection of their own). A write WITHOUT the `tx` from inside a unit's work waits for that very unit: a
 * deadlock, as it would be on a real database's write lock. Pass the `tx` on.
 */
export class InMemoryWebhookDatabase {
  readonly triggers = new Map<string, StoredTrigger>();
  /** Trigger keys by key id, revoked ones included. */
  readonly triggerKeys = new Map<string, TriggerKeyRecord>();
  readonly invocations = new Map<string, StoredInvocation>();
  /** Credits per account id; an account exists once it has an entry. */
  readonly balances = new Map<string, number>();
  /** Callbacks per trigger id. */
  readonly callbacks = new Map<string, CallbackRecord>();
  readonly deliveries = new Map<string, StoredDelivery>();
  /** Triggers' signing secrets by id. */
  readonly signingSecrets = new Map<string, SigningSecretRecord>();
  /** The audit log, by entry id. */
  readonly auditEntries = new Map<string, AuditEntry>();
  private tail: Promise<unknown> = Promise.resolve();

  /** Runs `fn` once every unit and write queued before it is done. */
  exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => undefined);
    return result;
  }

  /**
   * Runs one write: at once inside the given unit (whose lock is held), else on its own behind the lock.
   * `change` records what it alters through `tx.remember` when it has a unit.
   */
  write<T>(tx: WebhookTransaction | undefined, change: (tx: InMemoryTransaction | undefined) => T): Promise<T> {
    if (tx === undefined) return this.exclusive(() => change(undefined));
    return this.read(tx, () => change(this.own(tx)));
  }

  /** Runs one read at once; a given `tx` must be an open unit of this database. */
  // async: runs `look` synchronously now, and turns what it throws into a rejection.
  async read<T>(tx: WebhookTransaction | undefined, look: () => T): Promise<T> {
    if (tx !== undefined) this.own(tx);
    return look();
  }

  private own(tx: WebhookTransaction): InMemoryTransaction {
    if (!(tx instanceof InMemoryTransaction) || tx.database !== this) {
      throw new Error('The in-memory stores only join transactions of their own InMemoryWebhookDatabase (use InMemoryUnitOfWork on it)');
    }
    tx.assertOpen();
    return tx;
  }
}
