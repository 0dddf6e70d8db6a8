import { Test } from '@nestjs/testing';
import { InMemoryWebhookStorage } from '../../src/persistence/memory/in-memory-webhook-storage.js';
import { WebhookStorage } from '../../src/persistence/webhook-storage.js';
import { WebhookTriggerModule, type WebhookTriggerModuleOptions } from '../../src/index.js';
import { createScratchDatabase } from '../helpers/services.js';

/** A fresh, empty `WebhookStorage` for one test, and how to throw it away. */
export interface OpenedStorage {
  storage: WebhookStorage;
  close(): Promise<void>;
}

/** Opens a fresh storage; the contract suites call it before each test. */
export type OpenStorage = () => Promise<OpenedStorage>;

/** The in-memory storage a host (or a spec) gives as the `storage` extra. */
export function openInMemoryStorage(): Promise<OpenedStorage> {
  return Promise.resolve({ storage: new InMemoryWebhookStorage(), close: () => Promise.resolve() });
}

/**
 * The module's own SQL storage on `database`, migrated by the module. The module is compiled but not
 * initialised: no bot discovery, no startup recovery and no lease-recovery timer, which would otherwise
 * settle the expired leases these checks create.
 */
async function openModuleStorage(database: WebhookTriggerModuleOptions['database'], drop?: () => Promise<void>): Promise<OpenedStorage> {
  const moduleRef = await Test.createTestingModule({ imports: [WebhookTriggerModule.forRoot({ database })] }).compile();
  return {
    storage: moduleRef.get(WebhookStorage),
    close: async () => {
      await moduleRef.close();
      await drop?.();
    },
  };
}

/** The SQL storage on a fresh in-memory SQLite database (one connection, group commit, as on a file). */
export function openSqliteStorage(): Promise<OpenedStorage> {
  return openModuleStorage({ type: 'better-sqlite3', database: ':memory:' });
}

/** The SQL storage on a fresh scratch database of the PostgreSQL server at `baseUrl` (its batched accept step included), dropped on close. */
export function postgresStorage(baseUrl: string): OpenStorage {
  return async () => {
    const scratch = await createScratchDatabase(baseUrl);
    try {
      return await openModuleStorage({ type: 'postgres', url: scratch.url }, scratch.drop);
    } catch (error) {
      await scratch.drop();
      throw error;
    }
  };
}
