import { Injectable, Logger, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import { DataSource } from 'typeorm';
import {
  HOST_DATA_SOURCE_ENTITIES,
  HOST_DATA_SOURCE_MIGRATIONS,
  HOST_DATA_SOURCE_MISSING,
  HOST_DATA_SOURCE_SQLITE,
  HOST_DATA_SOURCE_SYNCHRONIZE,
  SQLITE_DRIVER_MAY_ABORT,
} from '../../errors/webhook-trigger.messages.js';
import { WebhookConfigurationError } from '../../errors/webhook-trigger.errors.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../../options/webhook-trigger-options.interface.js';
import { WEBHOOK_TRIGGER_ENTITIES, WebhookTriggerEntity } from './entities.js';
import { WEBHOOK_TRIGGER_MIGRATIONS } from './migrations/index.js';

/**
 * The token `TypeOrmModule` registers a DataSource under (@nestjs/typeorm's `getDataSourceToken`), without
 * loading @nestjs/typeorm, which only hosts that bring their own DataSource install: the `DataSource` class
 * for the default one, `<name>DataSource` for a named one.
 */
export function dataSourceToken(name: string): typeof DataSource | string {
  return name === 'default' ? DataSource : `${name}DataSource`;
}

/** Injection token of the TypeORM DataSource the module uses (its own, or the host's). */
export const WEBHOOK_DATA_SOURCE = Symbol('WEBHOOK_TRIGGER_DATA_SOURCE');

/** The subset of better-sqlite3 the SQLite executor uses. */
export interface SqliteStatement {
  reader: boolean;
  all(...params: unknown[]): Record<string, unknown>[];
  run(...params: unknown[]): { changes: number };
}
export interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): void;
}

/** A better-sqlite3 `Database`, as the module opens and closes its read connection. */
interface SqliteDatabase extends SqliteConnection {
  readonly name: string;
  readonly memory: boolean;
  close(): void;
}
type SqliteLibrary = new (file: string, options: { readonly: boolean; fileMustExist: boolean; timeout: number }) => SqliteDatabase;

/** How long a statement waits for a lock another process holds on the file (better-sqlite3's `timeout`). */
const SQLITE_BUSY_TIMEOUT_MS = 5000;

/** The read connection of each owned SQLite file, by the DataSource's own (write) connection. */
const sqliteReaders = new WeakMap<SqliteConnection, SqliteDatabase>();

/**
 * The better-sqlite3 connection under the module's OWN SQLite DataSource (TypeORM's driver keeps it as
 * `databaseConnection`). With `openSqliteReader`, the only place the module touches the driver: group commit
 * needs the connection to itself, which is why a host's SQLite DataSource is refused (see `dataSourceProviders`).
 */
export function sqliteConnectionOf(dataSource: DataSource): SqliteConnection {
  return (dataSource.driver as unknown as { databaseConnection: SqliteConnection }).databaseConnection;
}

/**
 * Where reads outside a unit of work run on the module's own SQLite database (see `SqliteExecutor`): a second,
 * read-only connection to the file, which in WAL mode sees the last COMMIT and never the group transaction in
 * progress on `writer`. An in-memory database has none (a second connection would open another, empty
 * database), so its reads share `writer`.
 */
export function sqliteReaderOf(writer: SqliteConnection): SqliteConnection {
  return sqliteReaders.get(writer) ?? writer;
}

/** Opens the read connection of an owned SQLite file, once its schema is there (the library TypeORM loaded). */
function openSqliteReader(dataSource: DataSource): void {
  const writer = sqliteConnectionOf(dataSource) as SqliteDatabase;
  if (writer.memory) return;
  const Library = (dataSource.driver as unknown as { sqlite: SqliteLibrary }).sqlite;
  sqliteReaders.set(writer, new Library(writer.name, { readonly: true, fileMustExist: true, timeout: SQLITE_BUSY_TIMEOUT_MS }));
}

/**
 * Each unit of a group commit runs in a SAVEPOINT, so SQLite copies every page a unit first changes into a
 * statement journal (to roll that unit back alone). With the default temp store that journal is a temporary
 * file: a run's INSERT took ~3x as long (bench/README.md). The statement journal only serves a rollback inside
 * the open transaction (the WAL is what survives a crash), so keeping it in memory costs no durability. Set
 * after the migrations, whose index builds may sort a whole table and keep spilling that to disk.
 */
function keepStatementJournalsInMemory(dataSource: DataSource): void {
  sqliteConnectionOf(dataSource).exec('PRAGMA temp_store = MEMORY');
}

function closeSqliteReader(dataSource: DataSource): void {
  if (dataSource.options.type !== 'better-sqlite3') return;
  const writer = sqliteConnectionOf(dataSource);
  sqliteReaders.get(writer)?.close();
  sqliteReaders.delete(writer);
}

/**
 * Whether this better-sqlite3 can abort on this Node: from 24.19 on, `node::ObjectWrap` (which better-sqlite3
 * before 13 builds on) removes an environment cleanup hook when an object is freed, and asserts if the garbage
 * collector frees it where no environment is current (nodejs/node#65446). better-sqlite3 13 is on Node-API.
 * The warning to log, or undefined (safe, or the driver's version unknown).
 */
export function sqliteDriverHazard(nodeVersion: string, driverVersion: string | undefined): string | undefined {
  const [major, minor] = nodeVersion.replace(/^v/, '').split('.').map(Number);
  const brokenNode = major > 24 || (major === 24 && minor >= 19);
  if (!brokenNode || driverVersion === undefined || Number(driverVersion.split('.')[0]) >= 13) return undefined;
  return SQLITE_DRIVER_MAY_ABORT(driverVersion, nodeVersion);
}

/** The installed better-sqlite3's version (the copy this package resolves, as TypeORM's driver does), if it can be read. */
function sqliteDriverVersion(): string | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the optional peer's manifest, read only on SQLite
    return (require('better-sqlite3/package.json') as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/** Opens the module's own database: WAL on SQLite (and its read connection), shipped migrations (never `synchronize`). */
async function openOwnedDataSource(options: ResolvedWebhookTriggerOptions): Promise<DataSource> {
  const db = options.database;
  const common = {
    entities: WEBHOOK_TRIGGER_ENTITIES,
    migrations: WEBHOOK_TRIGGER_MIGRATIONS,
    migrationsTableName: 'webhook_migrations',
    synchronize: false,
    logging: false,
  } as const;
  const dataSource =
    db.type === 'postgres'
      ? new DataSource({ type: 'postgres', url: db.url, ...common })
      : new DataSource({
          type: 'better-sqlite3',
          database: db.database,
          enableWAL: true, // also what lets the read connection see the last COMMIT while a group is open
          timeout: SQLITE_BUSY_TIMEOUT_MS,
          // FULL: a committed run survives power loss, not only a crash. Group commit pays for it.
          prepareDatabase: (handle: { pragma(sql: string): unknown }) => {
            handle.pragma('synchronous = FULL');
          },
          ...common,
        });
  if (db.type === 'better-sqlite3') {
    const hazard = sqliteDriverHazard(process.version, sqliteDriverVersion());
    if (hazard) new Logger(LOG_CONTEXT).warn(hazard);
  }
  await dataSource.initialize();
  if (options.migrationsRun) await dataSource.runMigrations({ transaction: 'each' });
  if (db.type === 'better-sqlite3') {
    keepStatementJournalsInMemory(dataSource);
    openSqliteReader(dataSource);
  }
  return dataSource;
}

/** Each table the module uses with the newest column its migrations add: missing means a migration did not run. */
const SCHEMA_PROBES = [
  'SELECT id, credits FROM webhook_accounts WHERE 1 = 0',
  'SELECT id, deleted_at FROM webhook_triggers WHERE 1 = 0',
  'SELECT id, rotated_at, last_used_at FROM webhook_trigger_keys WHERE 1 = 0',
  'SELECT id, owner, lease_expires_at, request_hash, trace_context FROM webhook_invocations WHERE 1 = 0',
];

/**
 * A host DataSource must exist, be PostgreSQL, carry the module's entities, leave the schema to the
 * migrations (no `synchronize`) and have run them. Checked at startup, each failure naming the fix,
 * instead of failing at the first trigger.
 */
async function checkHostDataSource(dataSource: DataSource | undefined, name: string): Promise<DataSource> {
  if (!dataSource) throw new WebhookConfigurationError(HOST_DATA_SOURCE_MISSING(name));
  if (dataSource.options.type !== 'postgres') throw new WebhookConfigurationError(HOST_DATA_SOURCE_SQLITE(name, dataSource.options.type));
  if (!dataSource.hasMetadata(WebhookTriggerEntity)) throw new WebhookConfigurationError(HOST_DATA_SOURCE_ENTITIES(name));
  if (dataSource.options.synchronize) throw new WebhookConfigurationError(HOST_DATA_SOURCE_SYNCHRONIZE(name));
  for (const probe of SCHEMA_PROBES) {
    try {
      await dataSource.query(probe);
    } catch (error) {
      throw new WebhookConfigurationError(HOST_DATA_SOURCE_MIGRATIONS(name, (error as Error).message));
    }
  }
  return dataSource;
}

/** Closes the owned database after everything else has stopped (runs drain in onModuleDestroy). */
@Injectable()
export class OwnedDataSourceCloser implements OnApplicationShutdown {
  private readonly logger = new Logger(LOG_CONTEXT);
  private dataSource: DataSource | null = null;

  own(dataSource: DataSource): void {
    this.dataSource = dataSource;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource?.isInitialized) {
      closeSqliteReader(this.dataSource);
      await this.dataSource.destroy().catch((e: unknown) => this.logger.error('Closing the database failed', String(e)));
    }
  }
}

/** `WEBHOOK_DATA_SOURCE`: the host's DataSource named by `dataSourceName`, or the module's own. */
export function dataSourceProviders(dataSourceName: string | undefined): Provider[] {
  if (dataSourceName !== undefined) {
    return [
      {
        provide: WEBHOOK_DATA_SOURCE,
        // RESOLVED_OPTIONS first: a bad combination of options is reported before the DataSource is judged.
        // Optional, so a missing TypeOrmModule gets our message rather than Nest's "can't resolve dependencies".
        inject: [RESOLVED_OPTIONS, { token: dataSourceToken(dataSourceName), optional: true }],
        useFactory: (_options: ResolvedWebhookTriggerOptions, dataSource: DataSource | undefined) =>
          checkHostDataSource(dataSource, dataSourceName),
      },
    ];
  }
  return [
    OwnedDataSourceCloser,
    {
      provide: WEBHOOK_DATA_SOURCE,
      inject: [RESOLVED_OPTIONS, OwnedDataSourceCloser],
      useFactory: async (options: ResolvedWebhookTriggerOptions, closer: OwnedDataSourceCloser) => {
        const dataSource = await openOwnedDataSource(options);
        closer.own(dataSource);
        return dataSource;
      },
    },
  ];
}
