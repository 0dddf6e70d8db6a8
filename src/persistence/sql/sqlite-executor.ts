import type { WebhookTransaction } from '../unit-of-work.js';
import type { SqliteConnection, SqliteStatement } from '../typeorm/webhook-data-source.js';
import { SqlExecutor, type SqlResult } from './sql-executor.js';

/** A SQLite unit as the stores see it; `WebhookTransaction` to everyone else. */
class SqliteTransaction implements WebhookTransaction {
  readonly __webhookTransaction = true as const;
}

/** A commit shared by the units of one event-loop tick. */
interface Batch {
  committed: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * SQLite (better-sqlite3 is synchronous; the module's own file, whose one connection nobody else uses):
 * - Every write goes through one queue, so no write can land inside another caller's open unit
 *   between its awaits. Reads run at once (see `read`).
 * - Group commit: the units of one event-loop tick run in SAVEPOINTs inside one transaction, committed
 *   once at the end of the tick. `synchronous=FULL` is kept (durable across power loss), the fsync is
 *   shared, and no caller hears "done" before the COMMIT that holds its work. A failed unit rolls back
 *   to its savepoint without touching the others.
 * Statements are prepared once per SQL text, transaction control included.
 */
export class SqliteExecutor extends SqlExecutor {
  private readonly statements = new Map<string, SqliteStatement>();
  private tail: Promise<unknown> = Promise.resolve();
  private batch: Batch | null = null;

  constructor(private readonly sqlite: SqliteConnection) {
    super();
  }

  run<T>(work: (tx: WebhookTransaction) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.exclusive(async () => {
        const batch = this.openBatch();
        this.exec('SAVEPOINT webhook_unit', []);
        try {
          const value = await work(new SqliteTransaction());
          this.exec('RELEASE webhook_unit', []);
          batch.committed.then(() => resolve(value), reject);
        } catch (error) {
          this.exec('ROLLBACK TO webhook_unit', []);
          this.exec('RELEASE webhook_unit', []);
          reject(error);
        }
      }).catch(reject); // BEGIN or SAVEPOINT itself failed (e.g. the database is locked by another process)
    });
  }

  /**
   * A read runs at once, without queueing behind writes: it cannot change anything, and the most it can
   * see on the shared connection is a unit still in progress, which is harmless for what the stores
   * read (ids, triggers, and finished runs, which never change). This keeps the trigger path's key
   * look-up and every woken sync request off the write queue. Inside a unit (`tx`) the queue is ours.
   */
  read(sql: string, params: unknown[], _tx?: WebhookTransaction): Promise<SqlResult> {
    try {
      return Promise.resolve(this.exec(sql, params));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Inside a unit (`tx`) the statement runs at once (the queue is already ours). On its own, it joins the
   * tick's batch without a SAVEPOINT (one statement is atomic by itself, and a failing one changes
   * nothing) and resolves once committed.
   */
  write(sql: string, params: unknown[], tx?: WebhookTransaction): Promise<SqlResult> {
    if (tx instanceof SqliteTransaction) return this.read(sql, params, tx);
    return new Promise<SqlResult>((resolve, reject) => {
      this.exclusive(async () => {
        const batch = this.openBatch();
        const result = this.exec(sql, params);
        batch.committed.then(() => resolve(result), reject);
      }).catch(reject);
    });
  }

  private exec(sql: string, params: unknown[]): SqlResult {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.sqlite.prepare(sql);
      this.statements.set(sql, statement);
    }
    if (statement.reader) return { rows: statement.all(...params), changes: 0 };
    return { rows: [], changes: statement.run(...params).changes };
  }

  private openBatch(): Batch {
    if (this.batch) return this.batch;
    this.exec('BEGIN IMMEDIATE', []);
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const committed = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    committed.catch(() => undefined); // each unit reports the failure to its own caller
    const batch: Batch = { committed, resolve, reject };
    this.batch = batch;
    // After the units already queued in this tick; later units open the next batch.
    setImmediate(() => void this.exclusive(async () => this.commitBatch(batch)));
    return batch;
  }

  private commitBatch(batch: Batch): void {
    this.batch = null;
    try {
      this.exec('COMMIT', []);
      batch.resolve();
    } catch (error) {
      try {
        this.sqlite.exec('ROLLBACK');
      } catch {
        // already rolled back by SQLite
      }
      batch.reject(error);
    }
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
