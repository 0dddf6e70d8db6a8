import type { BotOutput } from '../../bots/bot.types.js';
import { IdempotencyKeyTakenError } from '../../errors/webhook-trigger.errors.js';
import { InvocationRepository, type HistoryQuery, type LostRun } from '../invocation.repository.js';
import {
  acceptedRecord,
  TERMINAL_STATUSES,
  type InvocationRecord,
  type InvocationStatus,
  type InvocationTransition,
  type NewInvocation,
} from '../records.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { copyOf, type InMemoryTransaction, type InMemoryWebhookDatabase, type StoredInvocation } from './in-memory-database.js';

/** The fields a state change may write; any other key of `fields` is ignored, as the SQL store does. */
const TRANSITION_FIELDS = ['startedAt', 'finishedAt', 'outputs', 'error'] as const;

/** A copy without the lease (the contract never returns it), so callers cannot change the stored row. */
function toRecord({ leaseExpiresAt: _lease, ...row }: StoredInvocation): InvocationRecord {
  return copyOf(row);
}

const byId = (a: StoredInvocation, b: StoredInvocation) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const oldestFirst = (a: StoredInvocation, b: StoredInvocation) => a.createdAt.getTime() - b.createdAt.getTime() || byId(a, b);

/**
 * `InvocationRepository` on an `InMemoryWebhookDatabase`, following the contract to the letter:
 * - every state change is conditional (`status = from`, and `owner = …` when given) and reports whether
 *   it happened; terminal states never change because nothing transitions from them;
 * - `markRunning` claims a queued run with an owner and a lease, counting the attempt; `renewLeases`
 *   extends the leases of the runs named that an owner still holds;
 * - `recoverInterrupted` changes a running run only while it is still lost: its lease still expired
 *   (`leaseExpiredBefore`), or still held by the owner the queue declared dead (`owner`);
 * - an idempotency key is unique per trigger: `insert` throws `IdempotencyKeyTakenError`;
 * - with a `tx`, writes join that unit and are undone if it fails.
 */
export class InMemoryInvocationRepository extends InvocationRepository {
  constructor(private readonly database: InMemoryWebhookDatabase) {
    super();
  }

  private get rows(): Map<string, StoredInvocation> {
    return this.database.invocations;
  }

  /** Changes a row in place, first keeping its before-image in the unit (if any). */
  private change(unit: InMemoryTransaction | undefined, row: StoredInvocation, apply: (row: StoredInvocation) => void): void {
    unit?.remember('invocations', this.rows, row.id);
    apply(this.rows.get(row.id)!);
  }

  override get storesClaims(): boolean {
    return true;
  }

  insert(invocation: NewInvocation, tx?: WebhookTransaction): Promise<void> {
    return this.database.write(tx, (unit) => {
      if (this.rows.has(invocation.id)) throw new Error(`Invocation ${invocation.id} already exists`);
      const key = invocation.idempotencyKey;
      if (key !== null && [...this.rows.values()].some((r) => r.triggerId === invocation.triggerId && r.idempotencyKey === key)) {
        throw new IdempotencyKeyTakenError(invocation.triggerId, key);
      }
      unit?.remember('invocations', this.rows, invocation.id);
      const row: StoredInvocation = Object.assign(copyOf(acceptedRecord(invocation)), {
        leaseExpiresAt: invocation.claim ? new Date(invocation.claim.leaseExpiresAt.getTime()) : null,
      });
      this.rows.set(invocation.id, row);
    });
  }

  async findById(id: string): Promise<InvocationRecord | null> {
    const row = this.rows.get(id);
    return row ? toRecord(row) : null;
  }

  findByIdempotencyKey(triggerId: string, key: string, since: Date, tx?: WebhookTransaction): Promise<InvocationRecord | null> {
    return this.database.read(tx, () => {
      for (const row of this.rows.values()) {
        if (row.triggerId === triggerId && row.idempotencyKey === key && row.createdAt >= since) return toRecord(row);
      }
      return null;
    });
  }

  releaseIdempotencyKey(triggerId: string, key: string, before: Date, tx?: WebhookTransaction): Promise<void> {
    return this.database.write(tx, (unit) => {
      for (const row of [...this.rows.values()]) {
        if (row.triggerId === triggerId && row.idempotencyKey === key && row.createdAt < before) {
          this.change(unit, row, (r) => (r.idempotencyKey = null));
        }
      }
    });
  }

  transition(
    id: string,
    from: InvocationStatus,
    to: InvocationStatus,
    fields: InvocationTransition,
    condition: { owner?: string; tx?: WebhookTransaction } = {},
  ): Promise<boolean> {
    return this.database.write(condition.tx, (unit) => {
      const row = this.rows.get(id);
      if (!row || row.status !== from) return false;
      if (condition.owner !== undefined && row.owner !== condition.owner) return false;
      this.change(unit, row, (r) => setState(r, to, fields));
      return true;
    });
  }

  markRunning(id: string, startedAt: Date, owner: string, leaseExpiresAt: Date, tx?: WebhookTransaction): Promise<InvocationRecord | null> {
    return this.database.write(tx, (unit) => {
      const row = this.rows.get(id);
      if (!row || row.status !== 'queued') return null;
      this.change(unit, row, (r) =>
        Object.assign(r, {
          status: 'running',
          startedAt: new Date(startedAt),
          owner,
          leaseExpiresAt: new Date(leaseExpiresAt),
          attempts: (r.attempts ?? 0) + 1,
        }),
      );
      return toRecord(this.rows.get(id)!);
    });
  }

  appendOutput(id: string, owner: string, output: BotOutput, tx?: WebhookTransaction): Promise<boolean> {
    return this.database.write(tx, (unit) => {
      const row = this.rows.get(id);
      if (!row || row.status !== 'running' || row.owner !== owner) return false;
      this.change(unit, row, (r) => (r.outputs = [...(r.outputs ?? []), { title: output.title, message: output.message }]));
      return true;
    });
  }

  renewLeases(owner: string, ids: readonly string[], leaseExpiresAt: Date): Promise<void> {
    return this.database.write(undefined, () => {
      for (const id of ids) {
        const row = this.rows.get(id);
        if (row?.owner === owner && row.status === 'running') row.leaseExpiresAt = new Date(leaseExpiresAt);
      }
    });
  }

  async listExpiredLeases(now: Date, limit: number): Promise<InvocationRecord[]> {
    return [...this.rows.values()]
      .filter((r) => r.status === 'running' && isLeaseExpired(r, now))
      .sort(oldestFirst)
      .slice(0, limit)
      .map(toRecord);
  }

  recoverInterrupted(
    id: string,
    lost: LostRun,
    to: 'queued' | 'failed',
    fields: InvocationTransition,
    tx?: WebhookTransaction,
  ): Promise<boolean> {
    return this.database.write(tx, (unit) => {
      const row = this.rows.get(id);
      if (!row || row.status !== 'running') return false;
      const stillLost = 'owner' in lost ? row.owner === lost.owner : isLeaseExpired(row, lost.leaseExpiredBefore);
      if (!stillLost) return false;
      this.change(unit, row, (r) => {
        setState(r, to, fields);
        // Back in the queue: the run has not started and nobody holds it.
        if (to === 'queued') Object.assign(r, { startedAt: null, owner: null, leaseExpiresAt: null });
      });
      return true;
    });
  }

  deleteFinishedBefore(before: Date): Promise<number> {
    return this.database.write(undefined, () => {
      let deleted = 0;
      for (const row of [...this.rows.values()]) {
        if (row.createdAt < before && TERMINAL_STATUSES.has(row.status)) deleted += this.rows.delete(row.id) ? 1 : 0;
      }
      return deleted;
    });
  }

  async listQueued(limit: number, createdBefore?: Date): Promise<Array<Pick<InvocationRecord, 'id' | 'accountId'>>> {
    return [...this.rows.values()]
      .filter((r) => r.status === 'queued' && (createdBefore === undefined || r.createdAt < createdBefore))
      .sort(oldestFirst)
      .slice(0, limit)
      .map(({ id, accountId }) => ({ id, accountId }));
  }

  async listByBot(botId: string, query: HistoryQuery): Promise<InvocationRecord[]> {
    const { after } = query;
    return [...this.rows.values()]
      .filter(
        (r) =>
          r.botId === botId &&
          (query.status === undefined || r.status === query.status) &&
          (query.triggerId === undefined || r.triggerId === query.triggerId) &&
          (query.createdFrom === undefined || r.createdAt >= query.createdFrom) &&
          (query.createdBefore === undefined || r.createdAt < query.createdBefore) &&
          (query.search === undefined || r.id === query.search || r.idempotencyKey === query.search) &&
          // Strictly older than the cursor in (createdAt, id) order.
          (after === undefined ||
            r.createdAt.getTime() < after.createdAt.getTime() ||
            (r.createdAt.getTime() === after.createdAt.getTime() && r.id < after.id)),
      )
      .sort((a, b) => oldestFirst(b, a))
      .slice(0, query.limit)
      .map((row) => {
        const record = toRecord(row);
        // As in SQL: inputs, outputs and an error longer than their bounds (as JSON text) are left out of a
        // list, and flagged.
        const over = (value: unknown, bound: number) => value !== null && Buffer.byteLength(JSON.stringify(value)) > bound;
        const inputsTruncated = over(record.inputs, query.inputsUpTo);
        const outputsTruncated = over(record.outputs, query.outputsUpTo);
        const errorTruncated = over(record.error, query.errorUpTo);
        return {
          ...record,
          inputs: inputsTruncated ? {} : record.inputs,
          outputs: outputsTruncated ? null : record.outputs,
          error: errorTruncated ? null : record.error,
          inputsTruncated,
          outputsTruncated,
          errorTruncated,
        };
      });
  }

  async countByBotSince(botId: string, since: Date, cap: number): Promise<number> {
    let n = 0;
    for (const row of this.rows.values()) if (row.botId === botId && row.createdAt >= since) n++;
    return Math.min(n, Math.max(0, Math.trunc(cap)));
  }

  async lastUsedAt(triggerIds: string[]): Promise<Map<string, Date>> {
    const wanted = new Set(triggerIds);
    const last = new Map<string, Date>();
    for (const row of this.rows.values()) {
      const seen = last.get(row.triggerId);
      if (wanted.has(row.triggerId) && (seen === undefined || row.createdAt > seen)) last.set(row.triggerId, new Date(row.createdAt));
    }
    return last;
  }
}

/** Writes the new status and each field `fields` names (a field given as undefined is cleared, as in SQL). */
function setState(row: StoredInvocation, to: InvocationStatus, fields: InvocationTransition): void {
  row.status = to;
  for (const field of TRANSITION_FIELDS) {
    if (field in fields) (row as unknown as Record<string, unknown>)[field] = copyOf(fields[field]) ?? null;
  }
}

/** A lease that ran out before `now`; no lease at all counts as expired (a run claimed by an older version). */
function isLeaseExpired(row: StoredInvocation, now: Date): boolean {
  return row.leaseExpiresAt === null || row.leaseExpiresAt < now;
}
