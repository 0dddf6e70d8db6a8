import type { WebhookTransaction } from '../unit-of-work.js';
import { sqliteReaderOf, type SqliteConnection, type SqliteStatement } from '../typeorm/webhook-data-source.js';
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

/** One connection's statements, each prepared once per SQL text (transaction control included). */
class PreparedStatements {
  private readonly statements = new Map<string, SqliteStatement>();

  constructor(private readonly connection: SqliteConnection) {}

  exec(sql: string, params: unknown[]): SqlResult {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.connection.prepare(sql);
      this.statements.set(sql, statement);
    }
    if (statement.reader) return { rows: statement.all(...params), changes: 0 };
    return { rows: [], changes: statement.run(...params).changes };
  }
}

/**
 * SQLite (better-sqlite3 is synchronous; the module's own file, whose connections nobody else uses):
 * - Every write goes through one queue on the write connection, so no write can land inside another
 *   caller's open unit between its awaits.
 * - Group commit: the units of one event-loop tick run in SAVEPOINTs inside one transaction, committed
 *   once at the end of the tick. `synchronous=FULL` is kept (durable across power loss), the fsync is
 *   shared, and no caller hears "done" before the COMMIT that holds its work. A failed unit rolls back
 *   to its savepoint without touching the others.
 * - Reads outside a unit run at once on a second, read-only connection (see `read`), so they see the last
 *   COMMIT and never the group transaction in progress.
 */
export class SqliteExecutor extends SqlExecutor {
  private readonly writer: PreparedStatements;
  private readonly reader: PreparedStatements;
  /** A task holds the write connection: a unit from its SAVEPOINT to its RELEASE, a lone write, the COMMIT. */
  private busy = false;
  /** Tasks waiting for the write connection, in arrival order. */
  private readonly waiting: Array<() => void> = [];
  private pumping = false;
  private batch: Batch | null = null;

  constructor(private readonly sqlite: SqliteConnection) {
    super();
    this.writer = new PreparedStatements(sqlite);
    const reader = sqliteReaderOf(sqlite);
    this.reader = reader === sqlite ? this.writer : new PreparedStatements(reader);
  }

  run<T>(work: (tx: WebhookTransaction) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.whenFree(() => {
        let batch: Batch;
        try {
          batch = this.openBatch();
          this.writer.exec('SAVEPOINT webhook_unit', []);
        } catch (error) {
          this.release(); // BEGIN or SAVEPOINT itself failed (e.g. the database is locked by another process)
          return reject(error);
        }
        let pending: Promise<T>;
        try {
          pending = work(new SqliteTransaction());
        } catch (error) {
          pending = Promise.reject(error);
        }
        pending.then(
          (value) => this.releaseUnit(() => batch.committed.then(() => resolve(value), reject), reject),
          (error: unknown) => this.rollBackUnit(error, reject),
        );
      });
    });
  }

  /** Ends a unit whose work succeeded: RELEASE its savepoint (or roll back to it when the RELEASE fails); then the next task's turn. */
  private releaseUnit(succeeded: () => void, reject: (error: unknown) => void): void {
    try {
      this.writer.exec('RELEASE webhook_unit', []);
    } catch (error) {
      return this.rollBackUnit(error, reject);
    }
    try {
      succeeded();
    } catch (error) {
      reject(error);
    } finally {
      this.release();
    }
  }

  /** Ends a unit whose work (or its RELEASE) failed: roll back to its savepoint, leaving the tick's other units; then the next task's turn. */
  private rollBackUnit(failure: unknown, reject: (error: unknown) => void): void {
    try {
      this.writer.exec('ROLLBACK TO webhook_unit', []);
      this.writer.exec('RELEASE webhook_unit', []);
      reject(failure);
    } catch (error) {
      reject(error);
    } finally {
      this.release();
    }
  }

  /**
   * Inside a unit (`tx`) a read runs on the write connection, where the queue is already ours, and sees the
   * unit's own writes. Outside one it runs at once, never queued behind writes (the trigger path's key look-up,
   * every woken sync request, status and admin reads), on the read connection: in WAL mode that one sees the
   * last COMMIT only. On the write connection it would also see the group transaction still open there (the
   * units of this tick, released but not committed, or a unit between its awaits) and could answer with an
   * emitted output, a debit or a run that a crash or a rollback then takes back. What an answer shows is
   * stored. As on PostgreSQL, a read without `tx` from inside a unit's work does not see that unit's writes
   * (and does not wait for it). An in-memory database has only its one connection (see `sqliteReaderOf`).
   */
  read(sql: string, params: unknown[], tx?: WebhookTransaction): Promise<SqlResult> {
    try {
      return Promise.resolve((tx instanceof SqliteTransaction ? this.writer : this.reader).exec(sql, params));
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
    if (tx instanceof SqliteTransaction) return this.read(sql, params, tx); // on the write connection
    return new Promise<SqlResult>((resolve, reject) => {
      this.whenFree(() => {
        try {
          const batch = this.openBatch();
          const result = this.writer.exec(sql, params);
          batch.committed.then(() => resolve(result), reject);
        } catch (error) {
          reject(error);
        } finally {
          this.release();
        }
      });
    });
  }

  private openBatch(): Batch {
    if (this.batch) return this.batch;
    this.writer.exec('BEGIN IMMEDIATE', []);
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
    setImmediate(() =>
      this.whenFree(() => {
        try {
          this.commitBatch(batch);
        } finally {
          this.release();
        }
      }),
    );
    return batch;
  }

  private commitBatch(batch: Batch): void {
    this.batch = null;
    try {
      this.writer.exec('COMMIT', []);
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

  /**
   * Gives the write connection to `task` now when it is free, else after the tasks already waiting. A task
   * calls `release()` once it lets go (a unit, after its work's last await); no promise is made for the wait,
   * and a task that finds the connection free runs in its caller's turn.
   */
  private whenFree(task: () => void): void {
    this.waiting.push(task);
    if (!this.busy) this.pump();
  }

  private release(): void {
    this.busy = false;
    this.pump();
  }

  /** Starts waiting tasks one after another while the connection is free (a loop, not a recursion, when each lets go at once). */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.busy && this.waiting.length > 0) {
        const task = this.waiting.shift()!;
        this.busy = true;
        task();
      }
    } finally {
      this.pumping = false;
    }
  }
}
