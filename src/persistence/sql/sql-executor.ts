import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, QueryRunner } from 'typeorm';
import { WEBHOOK_DATA_SOURCE } from '../../webhook-trigger.constants.js';
import { WebhookUnitOfWork, type WebhookTransaction } from '../unit-of-work.js';

/** Rows of a SELECT (or RETURNING), and rows changed by a write. */
export interface SqlResult {
  rows: Record<string, unknown>[];
  changes: number;
}

/** The subset of better-sqlite3 used here (the driver object TypeORM already opened). */
interface SqliteStatement {
  reader: boolean;
  all(...params: unknown[]): Record<string, unknown>[];
  run(...params: unknown[]): { changes: number };
}
interface SqliteHandle {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): void;
}
// Transaction control statements are prepared once like the rest (exec() would parse them every time).

/** A transaction as the stores see it; `WebhookTransaction` to everyone else. */
class SqlTransaction implements WebhookTransaction {
  readonly __webhookTransaction = true as const;
  constructor(readonly queryRunner: QueryRunner | null) {}
}

/** A commit shared by the units of one event-loop tick. */
interface Batch {
  committed: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Runs the stores' SQL on the module's TypeORM DataSource, one SQL text for SQLite and PostgreSQL
 * (`?` placeholders; numbered for PostgreSQL), as prepared statements rather than through the query
 * builder: on the trigger path, TypeORM's SQL generation and entity hydration cost more than the
 * database itself.
 *
 * SQLite (better-sqlite3 is synchronous and TypeORM shares one connection):
 * - Every write goes through one queue, so no write can land inside another caller's open unit
 *   between its awaits. Reads run at once (see `read`).
 * - Group commit: the units of one event-loop tick run in SAVEPOINTs inside one transaction, committed
 *   once at the end of the tick. `synchronous=FULL` is kept (durable across power loss), the fsync is
 *   shared, and no caller hears "done" before the COMMIT that holds its work. A failed unit rolls back
 *   to its savepoint without touching the others.
 *
 * PostgreSQL: a pooled connection per unit with a real transaction; single statements use the pool.
 */
@Injectable()
export class TypeOrmUnitOfWork extends WebhookUnitOfWork {
  private readonly sqlite: SqliteHandle | null;
  private readonly statements = new Map<string, SqliteStatement>();
  private readonly postgresSql = new Map<string, string>();
  private tail: Promise<unknown> = Promise.resolve();
  private batch: Batch | null = null;

  constructor(@Inject(WEBHOOK_DATA_SOURCE) private readonly dataSource: DataSource) {
    super();
    this.sqlite = dataSource.options.type === 'postgres' ? null : (dataSource.driver as unknown as { databaseConnection: SqliteHandle }).databaseConnection;
  }

  run<T>(work: (tx: WebhookTransaction) => Promise<T>): Promise<T> {
    return this.sqlite ? this.runSqlite(work) : this.runPostgres(work);
  }

  /**
   * A read, inside `tx` when given. On SQLite it runs at once, without queueing behind writes: it
   * cannot change anything, and the most it can see on the shared connection is a unit still in
   * progress, which is harmless for what the stores read (ids, triggers, and finished runs, which never
   * change). This keeps the trigger path's key look-up and every woken sync request off the write queue.
   */
  read(sql: string, params: unknown[], tx?: WebhookTransaction): Promise<SqlResult> {
    if (tx || !this.sqlite) return this.query(sql, params, tx);
    try {
      return Promise.resolve(this.execSqlite(sql, params));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * A write, inside `tx` when given; otherwise on its own, resolved once committed. On SQLite a lone
   * statement joins the tick's batch without a SAVEPOINT: one statement is atomic by itself, and a
   * failing one changes nothing.
   */
  write(sql: string, params: unknown[], tx?: WebhookTransaction): Promise<SqlResult> {
    if (tx || !this.sqlite) return this.query(sql, params, tx);
    return new Promise<SqlResult>((resolve, reject) => {
      this.exclusive(async () => {
        const batch = this.openBatch();
        const result = this.execSqlite(sql, params);
        batch.committed.then(() => resolve(result), reject);
      }).catch(reject);
    });
  }

  private async query(sql: string, params: unknown[], tx?: WebhookTransaction): Promise<SqlResult> {
    if (this.sqlite) return this.execSqlite(sql, params); // inside a unit: the queue is already ours
    const own = (tx as SqlTransaction | undefined)?.queryRunner ?? null;
    const runner = own ?? this.dataSource.createQueryRunner();
    try {
      const result = await runner.query(this.toPostgres(sql), params, true);
      return { rows: Array.isArray(result.records) ? (result.records as Record<string, unknown>[]) : [], changes: result.affected ?? 0 };
    } finally {
      if (!own) await runner.release();
    }
  }

  private execSqlite(sql: string, params: unknown[]): SqlResult {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.sqlite!.prepare(sql);
      this.statements.set(sql, statement);
    }
    if (statement.reader) return { rows: statement.all(...params), changes: 0 };
    return { rows: [], changes: statement.run(...params).changes };
  }

  private runSqlite<T>(work: (tx: WebhookTransaction) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.exclusive(async () => {
        const batch = this.openBatch();
        this.execSqlite('SAVEPOINT webhook_unit', []);
        try {
          const value = await work(new SqlTransaction(null));
          this.execSqlite('RELEASE webhook_unit', []);
          batch.committed.then(() => resolve(value), reject);
        } catch (error) {
          this.execSqlite('ROLLBACK TO webhook_unit', []);
          this.execSqlite('RELEASE webhook_unit', []);
          reject(error);
        }
      }).catch(reject); // BEGIN or SAVEPOINT itself failed (e.g. the database is locked by another process)
    });
  }

  private openBatch(): Batch {
    if (this.batch) return this.batch;
    this.execSqlite('BEGIN IMMEDIATE', []);
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
      this.execSqlite('COMMIT', []);
      batch.resolve();
    } catch (error) {
      try {
        this.sqlite!.exec('ROLLBACK');
      } catch {
        // already rolled back by SQLite
      }
      batch.reject(error);
    }
  }

  private async runPostgres<T>(work: (tx: WebhookTransaction) => Promise<T>): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      await runner.startTransaction();
      try {
        const value = await work(new SqlTransaction(runner));
        await runner.commitTransaction();
        return value;
      } catch (error) {
        await runner.rollbackTransaction();
        throw error;
      }
    } finally {
      await runner.release();
    }
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => undefined);
    return result;
  }

  private toPostgres(sql: string): string {
    let converted = this.postgresSql.get(sql);
    if (converted === undefined) {
      let n = 0;
      converted = sql.replace(/\?/g, () => `$${++n}`);
      this.postgresSql.set(sql, converted);
    }
    return converted;
  }
}
