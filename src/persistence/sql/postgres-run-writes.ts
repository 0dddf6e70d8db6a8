import type { BotOutput } from '../../bots/bot.types.js';
import type { InvocationError, InvocationRecord, InvocationStatus } from '../records.js';
import { Batcher } from '../../batching/batcher.js';
import { isRolledBackConflict } from './database-errors.js';
import { INVOCATION_COLUMNS, text, toInvocation } from './sql-rows.js';
import type { SqlExecutor } from './sql-executor.js';

/** A claim `queued → running` by `owner`. */
export interface RunClaim {
  id: string;
  startedAt: Date;
  owner: string;
  leaseExpiresAt: Date;
}

/** A run's outcome, stored `running → status` only while `owner` holds it. */
export interface RunFinish {
  id: string;
  owner: string;
  status: InvocationStatus;
  finishedAt: Date;
  outputs: BotOutput[] | null;
  error: InvocationError | null;
}

const RETURNED = INVOCATION_COLUMNS.split(', ')
  .map((c) => `i.${c}`)
  .join(', ');

const CLAIM =
  `UPDATE webhook_invocations AS i SET status = 'running', started_at = v.started_at, owner = v.owner, lease_expires_at = v.lease_expires_at, ` +
  `attempts = i.attempts + 1 FROM unnest(?::text[], ?::bigint[], ?::text[], ?::bigint[]) AS v(id, started_at, owner, lease_expires_at) ` +
  `WHERE i.id = v.id AND i.status = 'queued' RETURNING ${RETURNED}`;

const FINISH =
  `UPDATE webhook_invocations AS i SET status = v.status, finished_at = v.finished_at, outputs = v.outputs, error = v.error ` +
  `FROM unnest(?::text[], ?::text[], ?::text[], ?::bigint[], ?::text[], ?::text[]) AS v(id, owner, status, finished_at, outputs, error) ` +
  `WHERE i.id = v.id AND i.status = 'running' AND i.owner = v.owner RETURNING i.id`;

/** Runs of a grouped statement PostgreSQL aborted for a conflict (a deadlock): it is run again, up to this many in all. */
const CONFLICT_ATTEMPTS = 3;

const json = (value: unknown): string | null => (value === null || value === undefined ? null : JSON.stringify(value));

/**
 * Group commit for a run's own writes on PostgreSQL: the claims (and, apart, the outcomes) made on this
 * node while one is in flight go together as ONE conditional statement, so each keeps its guarantee (a
 * run is claimed by one process only; an outcome is stored only by the owner of a still-running run)
 * and a batch costs one round trip and one commit. Used for writes outside a transaction only.
 */
export class PostgresRunWrites {
  private readonly claims = new Batcher<RunClaim, InvocationRecord | null>((batch) => this.claimAll(batch));
  private readonly finishes = new Batcher<RunFinish, boolean>((batch) => this.finishAll(batch));

  constructor(private readonly db: SqlExecutor) {}

  /** The claimed row, or null when the run was not queued. */
  claim(claim: RunClaim): Promise<InvocationRecord | null> {
    return this.claims.push(claim);
  }

  /** The claims in flight on this node, settled once answered; undefined when none are. */
  claimsInFlight(): Promise<void> | undefined {
    return this.claims.settled();
  }

  /** True when this call stored the outcome. */
  finish(finish: RunFinish): Promise<boolean> {
    return this.finishes.push(finish);
  }

  /**
   * Runs one grouped statement, again when PostgreSQL aborted it for a conflict with another transaction (a
   * deadlock): nothing of it was written, and each statement is conditional (a queued run, a running run of its
   * owner), so running it again decides the same. Without this, one aborted batch of outcomes left finished runs
   * `running`, to be recovered as interrupted a lease later.
   */
  private async write(sql: string, params: unknown[][]): ReturnType<SqlExecutor['write']> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.write(sql, params);
      } catch (error) {
        if (attempt >= CONFLICT_ATTEMPTS || !isRolledBackConflict(error)) throw error;
      }
    }
  }

  private async claimAll(batch: RunClaim[]): Promise<(InvocationRecord | null)[]> {
    const { rows } = await this.write(CLAIM, [
      batch.map((c) => c.id),
      batch.map((c) => c.startedAt.getTime()),
      batch.map((c) => c.owner),
      batch.map((c) => c.leaseExpiresAt.getTime()),
    ]);
    const claimed = new Map(rows.map((row) => [text(row.id), row]));
    // The same id twice in one batch (dispatched twice): the row is claimed once, and only the first hears so.
    return batch.map((c) => {
      const row = claimed.get(c.id);
      claimed.delete(c.id);
      return row ? toInvocation(row) : null;
    });
  }

  private async finishAll(batch: RunFinish[]): Promise<boolean[]> {
    const { rows } = await this.write(FINISH, [
      batch.map((f) => f.id),
      batch.map((f) => f.owner),
      batch.map((f) => f.status),
      batch.map((f) => f.finishedAt.getTime()),
      batch.map((f) => json(f.outputs)),
      batch.map((f) => json(f.error)),
    ]);
    const stored = new Set(rows.map((row) => text(row.id)));
    return batch.map((f) => stored.delete(f.id));
  }
}
