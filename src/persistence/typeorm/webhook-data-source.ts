import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { ResolvedWebhookTriggerOptions } from '../../options/webhook-trigger-options.interface.js';
import { HOST_DATA_SOURCE_ENTITIES } from '../../errors/webhook-trigger.messages.js';
import { WEBHOOK_TRIGGER_ENTITIES, WebhookTriggerEntity } from './entities.js';
import { WEBHOOK_TRIGGER_MIGRATIONS } from './migrations/index.js';

/** Opens the module's own database: WAL on SQLite, shipped migrations (never `synchronize`). */
export async function openOwnedDataSource(options: ResolvedWebhookTriggerOptions): Promise<DataSource> {
  const db = options.database;
  const common = { entities: WEBHOOK_TRIGGER_ENTITIES, migrations: WEBHOOK_TRIGGER_MIGRATIONS, migrationsTableName: 'webhook_migrations', synchronize: false, logging: false } as const;
  const dataSource =
    db.type === 'postgres'
      ? new DataSource({ type: 'postgres', url: db.url, ...common })
      : new DataSource({
          type: 'better-sqlite3',
          database: db.database,
          enableWAL: true,
          timeout: 5000,
          // FULL: a committed run survives power loss, not only a crash. Group commit pays for it.
          prepareDatabase: (handle: { pragma(sql: string): unknown }) => {
            handle.pragma('synchronous = FULL');
          },
          ...common,
        });
  await dataSource.initialize();
  if (options.migrationsRun) await dataSource.runMigrations({ transaction: 'each' });
  return dataSource;
}

/** Checks that a host DataSource carries the module's entities. */
export function checkHostDataSource(dataSource: DataSource, name: string): DataSource {
  if (!dataSource.hasMetadata(WebhookTriggerEntity)) throw new Error(HOST_DATA_SOURCE_ENTITIES(name));
  return dataSource;
}

/** Closes the owned database after everything else has stopped (runs drain in onModuleDestroy). */
@Injectable()
export class OwnedDataSourceCloser implements OnApplicationShutdown {
  private readonly logger = new Logger('WebhookTriggerModule');
  private dataSource: DataSource | null = null;

  own(dataSource: DataSource): void {
    this.dataSource = dataSource;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource?.isInitialized) {
      await this.dataSource.destroy().catch((e: unknown) => this.logger.error('Closing the database failed', String(e)));
    }
  }
}
