import type { DataSource, QueryRunner } from 'typeorm';
import { DatabaseConnectionLostError } from '../../errors/webhook-trigger.errors.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { databaseError } from './database-errors.js';
import { SqlExecutor, type SqlResult } from './sql-executor.js';

/** A PostgreSQL transaction as the stores see it; `WebhookTransaction` to everyone else. */
class PostgresTransaction implements WebhookTransaction {
  readonly __webhookTransaction = true as const;
  constructor(readonly queryRunner: QueryRunner) {}
}

/** PostgreSQL: a pooled connection per unit of work with a real transaction; single statements use the pool. */
export class PostgresExecutor extends SqlExecutor {
  /** `?` → `$1, $2…`, converted once per SQL text. */
  private readonly numbered = new Map<string, string>();

  constructor(private readonly dataSource: DataSource) {
    super();
  }

  read(sql: string, params: unknown[], tx?: WebhookTransaction): Promise<SqlResult> {
    return this.query(sql, params, tx);
  }

  write(sql: string, params: unknown[], tx?: WebhookTransaction): Promise<SqlResult> {
    return this.query(sql, params, tx);
  }

  async run<T>(work: (tx: WebhookTransaction) => Promise<T>): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect();
      await runner.startTransaction();
      try {
        const value = await work(new PostgresTransaction(runner));
        await runner.commitTransaction();
        return value;
      } catch (error) {
        // TypeORM releases a runner by itself only when its connection failed (a terminated backend, a restarted
        // server): the server has rolled the transaction back, and a rollback here would only fail again
        // (QueryRunnerAlreadyReleasedError), hiding what happened.
        if (runner.isReleased) throw new DatabaseConnectionLostError(error);
        await runner.rollbackTransaction();
        throw error;
      }
    } catch (error) {
      throw databaseError(error);
    } finally {
      await runner.release();
    }
  }

  private async query(sql: string, params: unknown[], tx?: WebhookTransaction): Promise<SqlResult> {
    const own = tx instanceof PostgresTransaction ? tx.queryRunner : null;
    const runner = own ?? this.dataSource.createQueryRunner();
    try {
      const result = await runner.query(this.toPostgres(sql), params, true);
      return { rows: Array.isArray(result.records) ? (result.records as Record<string, unknown>[]) : [], changes: result.affected ?? 0 };
    } catch (error) {
      throw databaseError(error);
    } finally {
      if (!own) await runner.release();
    }
  }

  private toPostgres(sql: string): string {
    let converted = this.numbered.get(sql);
    if (converted === undefined) {
      let n = 0;
      converted = sql.replace(/\?/g, () => `$${++n}`);
      this.numbered.set(sql, converted);
    }
    return converted;
  }
}
