import { WebhookUnitOfWork, type WebhookTransaction } from '../unit-of-work.js';

/** Rows of a SELECT (or RETURNING), and rows changed by a write. */
export interface SqlResult {
  rows: Record<string, unknown>[];
  changes: number;
}

/**
 * Where the SQL stores run their statements: one SQL text for SQLite and PostgreSQL (`?` placeholders),
 * as prepared statements rather than through TypeORM's query builder (on the trigger path its SQL
 * generation and entity hydration cost more than the database itself). TypeORM owns the connections,
 * the pool and the migrations. It is also the module's default unit of work, so the stores join its
 * transactions (`tx`), and only its own: a replaced unit of work comes with its own stores.
 */
export abstract class SqlExecutor extends WebhookUnitOfWork {
  /** A read, inside `tx` when given. */
  abstract read(sql: string, params: unknown[], tx?: WebhookTransaction): Promise<SqlResult>;
  /** A write, inside `tx` when given; otherwise on its own, resolved once committed. */
  abstract write(sql: string, params: unknown[], tx?: WebhookTransaction): Promise<SqlResult>;
}
