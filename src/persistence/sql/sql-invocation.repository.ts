import type { BotOutput } from '../../bots/bot.types.js';
import { InvocationRepository, type HistoryQuery, type LostRun } from '../invocation.repository.js';
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
import { PostgresExecutor } from './postgres-executor.js';
import { PostgresRunWrites } from './postgres-run-writes.js';

/** The columns a list bounds (`listByBot`): each is read whole only when short, else replaced and flagged. */
const BOUNDED_COLUMNS = ['inputs', 'outputs', 'error'] as const;

/** Every column but the bounded ones. */
const LIST_COLUMNS = INVOCATION_COLUMNS.split(', ')
  .filter((c) => !(BOUNDED_COLUMNS as readonly string[]).includes(c))
  .join(', ');

/**
 * The bounded columns as a list reads them: `<column>` (the value, or its stand-in past the bound) and
 * `<column>_truncated` (1 or 0); two `?` per column, the bound, in BOUNDED_COLUMNS order. The size is
 * `octet_length` (bytes of UTF-8), which both databases read from the value's header without loading a long
 * value (`length` counts characters: it reads, and on PostgreSQL decompresses, the whole megabyte).
 */
const BOUNDED_SELECT = BOUNDED_COLUMNS.map((c) => {
  const standIn = c === 'inputs' ? `'{}'` : 'NULL';
  return (
    `CASE WHEN octet_length(${c}) > ? THEN ${standIn} ELSE ${c} END AS ${c}, ` +
    `CASE WHEN octet_length(${c}) > ? THEN 1 ELSE 0 END AS ${c}_truncated`
  );
}).join(', ');

/** SQLite's lease renewal: the ids come as one JSON array (one statement text whatever their number). */
const RENEW_LEASES =
  `UPDATE webhook_invocations SET lease_expires_at = ? WHERE owner = ? AND status = 'running' ` +
  `AND id IN (SELECT value FROM json_each(?))`;
/**
 * PostgreSQL's lease renewal leaves out the rows another statement holds (SKIP LOCKED), so it never waits on
 * one: locking a process's running runs in its own order, it deadlocked with this process's grouped outcomes
 * (PostgresRunWrites, locking theirs in batch order) under load, and when PostgreSQL aborted the outcomes, their
 * runs, finished, were later recovered as interrupted. A row left out is being ended or claimed (with a fresh
 * lease) by that statement, or, if it is rolled back, renewed on the next round, well within the lease.
 */
const RENEW_LEASES_SKIP_LOCKED =
  `UPDATE webhook_invocations SET lease_expires_at = ? WHERE id IN ` +
  `(SELECT id FROM webhook_invocations WHERE owner = ? AND status = 'running' AND id = ANY(?::text[]) FOR UPDATE SKIP LOCKED)`;

/** Triggers per `lastUsedAt` statement. */
const LAST_USED_BATCH = 64;

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

const TRANSITION_FIELDS = Object.keys(TRANSITION_COLUMNS) as (keyof InvocationTransition)[];

/** `status = ?, <column> = ?…` per shape (a bit per field of TRANSITION_FIELDS it writes), made once each. */
const SET_CLAUSES = new Map<number, string>();

/**
 * `status = ?, <column> = ?…` for a state change and the values to bind, in order. The text is made once per
 * shape: a run's finish is on every run's path, and the same text also finds its prepared statement at once.
 */
function setClause(to: InvocationStatus, fields: InvocationTransition): [string, unknown[]] {
  let shape = 0;
  const values: unknown[] = [to];
  for (let i = 0; i < TRANSITION_FIELDS.length; i++) {
    const field = TRANSITION_FIELDS[i];
    if (!(field in fields)) continue;
    shape |= 1 << i;
    values.push(transitionValue(field, fields[field]));
  }
  let sets = SET_CLAUSES.get(shape);
  if (sets === undefined) {
    sets = ['status = ?', ...TRANSITION_FIELDS.filter((_, i) => shape & (1 << i)).map((f) => `${TRANSITION_COLUMNS[f]} = ?`)].join(', ');
    SET_CLAUSES.set(shape, sets);
  }
  return [sets, values];
}

/** A state change that is a run's outcome (what `PostgresRunWrites.finish` groups). */
const isOutcome = (from: InvocationStatus, fields: InvocationTransition, owner: string | undefined): owner is string =>
  from === 'running' &&
  owner !== undefined &&
  'finishedAt' in fields &&
  'outputs' in fields &&
  'error' in fields &&
  !('startedAt' in fields);

export class SqlInvocationRepository extends InvocationRepository {
  /** On PostgreSQL, claims and outcomes outside a transaction are grouped (SQLite's executor groups every commit). */
  private readonly grouped: PostgresRunWrites | null;

  constructor(private readonly db: SqlExecutor) {
    super();
    this.grouped = db instanceof PostgresExecutor ? new PostgresRunWrites(db) : null;
  }

  /** On PostgreSQL, the claims in flight on this node (settled once answered); undefined when none are. */
  claimsInFlight(): Promise<void> | undefined {
    return this.grouped?.claimsInFlight();
  }

  override get storesClaims(): boolean {
    return true;
  }

  async insert(i: NewInvocation, tx?: WebhookTransaction): Promise<void> {
    try {
      const claim = i.claim;
      await this.db.write(
        `INSERT INTO webhook_invocations (${INVOCATION_COLUMNS}, lease_expires_at) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)`,
        [
          i.id,
          i.triggerId,
          i.botId,
          i.accountId,
          claim ? 'running' : 'queued',
          JSON.stringify(i.inputs),
          i.credits,
          i.idempotencyKey,
          i.requestHash,
          i.createdAt.getTime(),
          claim ? claim.startedAt.getTime() : null,
          claim ? claim.owner : null,
          claim ? 1 : 0,
          i.traceContext ?? null,
          claim ? claim.leaseExpiresAt.getTime() : null,
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
    if (this.grouped && !condition.tx && isOutcome(from, fields, condition.owner)) {
      const { finishedAt, outputs = null, error = null } = fields;
      return this.grouped.finish({ id, owner: condition.owner, status: to, finishedAt: finishedAt!, outputs, error });
    }
    const [sets, params] = setClause(to, fields);
    params.push(id, from);
    if (condition.owner !== undefined) params.push(condition.owner);
    const owner = condition.owner === undefined ? '' : ' AND owner = ?';
    const { changes } = await this.db.write(
      `UPDATE webhook_invocations SET ${sets} WHERE id = ? AND status = ?${owner}`,
      params,
      condition.tx,
    );
    return changes === 1;
  }

  async appendOutput(id: string, owner: string, output: BotOutput, tx?: WebhookTransaction): Promise<boolean> {
    // Text surgery on the stored JSON array rather than JSON functions: one SQL text for SQLite and
    // PostgreSQL, and the stored text stays exactly what JSON.stringify wrote (jsonb would reorder keys).
    const element = JSON.stringify({ title: output.title, message: output.message });
    const { changes } = await this.db.write(
      `UPDATE webhook_invocations SET outputs = CASE WHEN outputs IS NULL OR outputs = '[]' THEN '[' || CAST(? AS TEXT) || ']' ` +
        `ELSE substr(outputs, 1, length(outputs) - 1) || ',' || CAST(? AS TEXT) || ']' END WHERE id = ? AND status = 'running' AND owner = ?`,
      [element, element, id, owner],
      tx,
    );
    return changes === 1;
  }

  async renewLeases(owner: string, ids: readonly string[], leaseExpiresAt: Date): Promise<void> {
    if (ids.length === 0) return;
    const lease = leaseExpiresAt.getTime();
    if (this.grouped) await this.db.write(RENEW_LEASES_SKIP_LOCKED, [lease, owner, ids]);
    else await this.db.write(RENEW_LEASES, [lease, owner, JSON.stringify(ids)]);
  }

  async listExpiredLeases(now: Date, limit: number): Promise<InvocationRecord[]> {
    const { rows } = await this.db.read(
      // A NULL lease is a run claimed before leases existed (an older version): its owner is long gone.
      `SELECT ${INVOCATION_COLUMNS} FROM webhook_invocations WHERE status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < ?) ORDER BY created_at, id LIMIT ?`,
      [now.getTime(), limit],
    );
    return rows.map(toInvocation);
  }

  async recoverInterrupted(
    id: string,
    lost: LostRun,
    to: 'queued' | 'failed',
    fields: InvocationTransition,
    tx?: WebhookTransaction,
  ): Promise<boolean> {
    const [sets, values] = setClause(to, to === 'queued' ? { ...fields, startedAt: null } : fields);
    const release = to === 'queued' ? ', owner = NULL, lease_expires_at = NULL' : '';
    const [stillLost, lostValue] =
      'owner' in lost
        ? ['owner = ?', lost.owner]
        : ['(lease_expires_at IS NULL OR lease_expires_at < ?)', lost.leaseExpiredBefore.getTime()];
    const { changes } = await this.db.write(
      `UPDATE webhook_invocations SET ${sets}${release} WHERE id = ? AND status = 'running' AND ${stillLost}`,
      [...values, id, lostValue],
      tx,
    );
    return changes === 1;
  }

  async deleteFinishedBefore(before: Date): Promise<number> {
    const { changes } = await this.db.write(`DELETE FROM webhook_invocations WHERE created_at < ? AND status IN (${FINISHED})`, [
      before.getTime(),
    ]);
    return changes;
  }

  async markRunning(
    id: string,
    startedAt: Date,
    owner: string,
    leaseExpiresAt: Date,
    tx?: WebhookTransaction,
  ): Promise<InvocationRecord | null> {
    if (this.grouped && !tx) return this.grouped.claim({ id, startedAt, owner, leaseExpiresAt });
    const { rows } = await this.db.write(
      `UPDATE webhook_invocations SET status = 'running', started_at = ?, owner = ?, lease_expires_at = ?, attempts = attempts + 1 WHERE id = ? AND status = 'queued' RETURNING ${INVOCATION_COLUMNS}`,
      [startedAt.getTime(), owner, leaseExpiresAt.getTime(), id],
      tx,
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

  // Every history shape below is one index range scan, read in index order (no sort of a bot's whole
  // history), with the indexes of migration 1764000000000 (WebhookTriggersHistory), which shows the
  // plans of SQLite (EXPLAIN QUERY PLAN) and PostgreSQL (EXPLAIN) on 1,000,000 runs.
  async listByBot(botId: string, query: HistoryQuery): Promise<InvocationRecord[]> {
    const where: string[] = [];
    const values: unknown[] = [];
    let search = '';
    const lookups: unknown[] = [];
    if (query.search !== undefined) {
      // Two exact look-ups (the primary key; the partial key index), kept apart from the filters by
      // MATERIALIZED: with the filters beside them, SQLite prefers a range of (bot_id, status, …) that
      // also gives the order, over the key's index. They find a handful of rows; the filters and the
      // order are then applied to those. UNION, not UNION ALL: a key may equal its run's id.
      search =
        `WITH found AS MATERIALIZED (SELECT ${INVOCATION_COLUMNS} FROM webhook_invocations WHERE id = ? ` +
        `UNION SELECT ${INVOCATION_COLUMNS} FROM webhook_invocations WHERE bot_id = ? AND idempotency_key = ?) `;
      lookups.push(query.search, botId, query.search);
    }
    if (query.triggerId !== undefined) {
      where.push('trigger_id = ?');
      values.push(query.triggerId);
    }
    // With a trigger too (a trigger of another bot finds nothing); both planners then walk
    // (trigger_id, created_at, id), the narrower range.
    where.push('bot_id = ?');
    values.push(botId);
    if (query.status !== undefined) {
      where.push('status = ?');
      values.push(query.status);
    }
    if (query.createdFrom !== undefined) {
      where.push('created_at >= ?');
      values.push(query.createdFrom.getTime());
    }
    if (query.createdBefore !== undefined) {
      where.push('created_at < ?');
      values.push(query.createdBefore.getTime());
    }
    if (query.after !== undefined) {
      // A row value: both databases make it the bound of the index range (an OR of the two cases is not).
      where.push('(created_at, id) < (?, ?)');
      values.push(query.after.createdAt.getTime(), query.after.id);
    }
    // The bounds are applied in SQL, so an oversized run's inputs, outputs or error never leave the database
    // for a list (one key holder's megabytes would otherwise be read, parsed and sent for every page).
    const bounds = { inputs: query.inputsUpTo, outputs: query.outputsUpTo, error: query.errorUpTo };
    const { rows } = await this.db.read(
      `${search}SELECT ${LIST_COLUMNS}, ${BOUNDED_SELECT} ` +
        `FROM ${search ? 'found' : 'webhook_invocations'} WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ?`,
      [...lookups, ...BOUNDED_COLUMNS.flatMap((c) => [bounds[c], bounds[c]]), ...values, query.limit],
    );
    return rows.map((row) => ({
      ...toInvocation(row),
      inputsTruncated: Number(row.inputs_truncated) === 1,
      outputsTruncated: Number(row.outputs_truncated) === 1,
      errorTruncated: Number(row.error_truncated) === 1,
    }));
  }

  async countByBotSince(botId: string, since: Date, cap: number): Promise<number> {
    // The LIMIT inside stops the index range scan at `cap` entries, however busy the bot.
    const { rows } = await this.db.read(
      `SELECT COUNT(*) AS n FROM (SELECT 1 AS one FROM webhook_invocations WHERE bot_id = ? AND created_at >= ? LIMIT ?) AS capped`,
      [botId, since.getTime(), Math.max(0, Math.trunc(cap))],
    );
    return Number(rows[0]?.n ?? 0);
  }

  async lastUsedAt(triggerIds: string[]): Promise<Map<string, Date>> {
    const ids = [...new Set(triggerIds)];
    const last = new Map<string, Date>();
    for (let start = 0; start < ids.length; start += LAST_USED_BATCH) {
      const batch = ids.slice(start, start + LAST_USED_BATCH);
      // Padded to a power of two with repeats, so a handful of SQL texts are ever prepared.
      let size = 1;
      while (size < batch.length) size *= 2;
      const padded = [...batch, ...Array<string>(size - batch.length).fill(batch[batch.length - 1])];
      // One MAX per trigger, each the last entry of (trigger_id, created_at, id): a seek, not a scan.
      const { rows } = await this.db.read(
        `WITH wanted(id) AS (VALUES ${padded.map(() => '(?)').join(', ')}) ` +
          `SELECT wanted.id AS trigger_id, (SELECT MAX(created_at) FROM webhook_invocations WHERE trigger_id = wanted.id) AS last_created_at FROM wanted`,
        padded,
      );
      for (const row of rows) {
        if (row.last_created_at !== null && row.last_created_at !== undefined)
          last.set(String(row.trigger_id), new Date(Number(row.last_created_at)));
      }
    }
    return last;
  }
}
