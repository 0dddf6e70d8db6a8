import type { Provider } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { sqliteConnectionOf, WEBHOOK_DATA_SOURCE } from '../typeorm/webhook-data-source.js';
import { PostgresExecutor } from './postgres-executor.js';
import { SqlExecutor } from './sql-executor.js';
import { SqliteExecutor } from './sqlite-executor.js';

/** The executor for the module's DataSource: grouped writes on its own SQLite file, pooled transactions on PostgreSQL. */
export const sqlExecutorProvider: Provider = {
  provide: SqlExecutor,
  inject: [WEBHOOK_DATA_SOURCE],
  useFactory: (dataSource: DataSource): SqlExecutor =>
    dataSource.options.type === 'postgres' ? new PostgresExecutor(dataSource) : new SqliteExecutor(sqliteConnectionOf(dataSource)),
};
