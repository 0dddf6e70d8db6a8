import { Injectable } from '@nestjs/common';
import { InvocationRepository, type LostRun } from '../invocation.repository.js';
import { IdempotencyKeyTakenError } from '../../errors/webhook-trigger.errors.js';
import {
  TERMINAL_STATUSES,
  type InvocationRecord,
  type InvocationStatus,
  type InvocationTransition,
  type NewInvocation,
} from '../records.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { INVOCATION_COLUMNS, isUniqueViolation, toInvocation } from './sql-rows.js';
import { SqlExecutor } from './sql-executor.js';

/** Every column but the outputs, which a list bounds. */
const LIST_COLUMNS = INVOCATION_COLUMNS.split(', ')
  .filter((c) => c !== 'outputs')
  .join(', ');

/** The terminal statuses as a SQL list. */
const FINISHED = [...TERMINAL_STATUSES].map((s) => `'${s}'`).join(', ');

/** Column of each optional field a state change may write. */
const TRANSITION_COLUMNS: { [K in keyof Required<InvocationTransition>]: string } = {
  startedAt: 'started_at',
  finishedAt: 'finished_at',
  outputs: 'outputs',
  error: 'error',
};

function transitionValue(field: keyof InvocationTransition, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  return field === 'startedAt' || field === 'finishedAt' ? (value as Date).getTime() : JSON.stringify(value);
}

/** `status = ?, <column> = ?…` for a state change and the values to bind, in order. */
function setClause(to: InvocationStatus, fields: InvocationTransition): [string, unknown[]] {
  const names = (Object.keys(TRANSITION_COLUMNS) as (keyof InvocationTransition)[]).filter((f) => f in fields);
  const sets = ['status = ?', ...names.map((f) => `${TRANSITION_COLUMNS[f]} = ?`)].join(', ');
  return [sets, [to, ...names.map((f) => transitionValue(f, fields[f]))]];
}

@Injectable()
export class SqlInvocationRepository extends InvocationRepository {
  constructor(private readonly db: SqlExecutor) {
    super();
  }

  async insert(i: NewInvocation, tx?: WebhookTransaction): Promise<void> {
    try {
      await this.db.write(
        `INSERT INTO webhook_invocations (${INVOCATION_COLUMNS}) VALUES (?, ?, ?, ?, 'queued', ?, NULL, NULL, ?, ?, ?, ?, NULL, NULL, NULL)`,
        [
          i.id,
          i.triggerId,
          i.botId,
          i.accountId,
          JSON.stringify(i.inputs),
          i.credits,
          i.idempotencyKey,
          i.requestHash,
          i.createdAt.getTime(),
        ],
        tx,
      );
    } catch (error) {
      if (i.idempotencyKey !== null && isUniqueViolation(error)) throw new IdempotencyKeyTakenError(i.triggerId, i.idempotencyKey);
      throw error;
    }
  }

  async findById(id: string): Promise<InvocationRecord | null> {
    const { rows } = await this.db.read(`SELECT ${INVOCATION_COLUMNS} FROM webhook_invocations WHERE id = ?`, [id]);
    return rows[0] ? toInvocation(rows[0]) : null;
  }

  async findByIdempotencyKey(triggerId: string, key: string, since: Date, tx?: WebhookTransaction): Promise<InvocationRecord | null> {
    const { rows } = await this.db.read(
      `SELECT ${INVOCATION_COLUMNS} FROM webhook_invocations WHERE trigger_id = ? AND idempotency_key = ? AND created_at >= ?`,
      [triggerId, key, since.getTime()],
      tx,
    );
    return rows[0] ? toInvocation(rows[0]) : null;
  }

  async releaseIdempotencyKey(triggerId: string, key: string, before: Date, tx?: WebhookTransaction): Promise<void> {
    await this.db.write(
      `UPDATE webhook_invocations SET idempotency_key = NULL WHERE trigger_id = ? AND idempotency_key = ? AND created_at < ?`,
      [triggerId, key, before.getTime()],
      tx,
    );
  }

  async transition(
    id: string,
    from: InvocationStatus,
    to: InvocationStatus,
    fields: InvocationTransition,
    condition: { owner?: string; tx?: WebhookTransaction } = {},
  ): Promise<boolean> {
    const [sets, values] = setClause(to, fields);
    const owner = condition.owner === undefined ? '' : ' AND owner = ?';
    const params = [...values, id, from, ...(condition.owner === undefined ? [] : [condition.owner])];
    const { changes } = await this.db.write(
      `UPDATE webhook_invocations SET ${sets} WHERE id = ? AND status = ?${owner}`,
      params,
      condition.tx,
    );
    return changes === 1;
  }

  async renewLeases(owner: string, leaseExpiresAt: Date): Promise<void> {
    await this.db.write(`UPDATE webhook_invocations SET lease_expires_at = ? WHERE owner = ? AND status = 'running'`, [
      leaseExpiresAt.getTime(),
      owner,
    ]);
  }

  async listExpiredLeases(now: Date, limit: number): Promise<InvocationRecord[]> {
    const { rows } = await this.db.read(
      // A NULL lease is a run claimed before leases existed (an older version): its owner is long gone.
      `SELECT ${INVOCATION_COLUMNS} FROM webhook_invocations WHERE status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < ?) ORDER BY created_at, id LIMIT ?`,
      [now.getTime(), limit],
    );
    return rows.map(toInvocation);
  }

  async recoverInterrupted(id: string, lost: LostRun, to: 'queued' | 'failed', fields: InvocationTransition): Promise<boolean> {
    const [sets, values] = setClause(to, to === 'queued' ? { ...fields, startedAt: null } : fields);
    const release = to === 'queued' ? ', owner = NULL, lease_expires_at = NULL' : '';
    const [stillLost, lostValue] =
      'owner' in lost
        ? ['owner = ?', lost.owner]
        : ['(lease_expires_at IS NULL OR lease_expires_at < ?)', lost.leaseExpiredBefore.getTime()];
    const { changes } = await this.db.write(
      `UPDATE webhook_invocations SET ${sets}${release} WHERE id = ? AND status = 'running' AND ${stillLost}`,
      [...values, id, lostValue],
    );
    return changes === 1;
  }

  async deleteFinishedBefore(before: Date): Promise<number> {
    const { changes } = await this.db.write(`DELETE FROM webhook_invocations WHERE created_at < ? AND status IN (${FINISHED})`, [
      before.getTime(),
    ]);
    return changes;
  }

  async markRunning(id: string, startedAt: Date, owner: string, leaseExpiresAt: Date): Promise<InvocationRecord | null> {
    const { rows } = await this.db.write(
      `UPDATE webhook_invocations SET status = 'running', started_at = ?, owner = ?, lease_expires_at = ? WHERE id = ? AND status = 'queued' RETURNING ${INVOCATION_COLUMNS}`,
      [startedAt.getTime(), owner, leaseExpiresAt.getTime(), id],
    );
    return rows[0] ? toInvocation(rows[0]) : null;
  }

  async listQueued(limit: number, createdBefore?: Date): Promise<Array<Pick<InvocationRecord, 'id' | 'accountId'>>> {
    const { rows } = await this.db.read(
      `SELECT id, account_id FROM webhook_invocations WHERE status = 'queued' AND created_at < ? ORDER BY created_at, id LIMIT ?`,
      [createdBefore?.getTime() ?? Number.MAX_SAFE_INTEGER, limit],
    );
    return rows.map((r) => ({ id: String(r.id), accountId: String(r.account_id) }));
  }

  async listByBot(botId: string, limit: number, outputsUpTo: number): Promise<InvocationRecord[]> {
    // The bound is applied in SQL, so an oversized run's outputs never leave the database for a list.
    const { rows } = await this.db.read(
      `SELECT ${LIST_COLUMNS}, CASE WHEN length(outputs) > ? THEN NULL ELSE outputs END AS outputs, ` +
        `CASE WHEN length(outputs) > ? THEN 1 ELSE 0 END AS outputs_truncated ` +
        `FROM webhook_invocations WHERE bot_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`,
      [outputsUpTo, outputsUpTo, botId, limit],
    );
    return rows.map((row) => ({ ...toInvocation(row), outputsTruncated: Number(row.outputs_truncated) === 1 }));
  }
}
