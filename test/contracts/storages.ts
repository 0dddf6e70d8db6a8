import { Test } from '@nestjs/testing';
import { InMemoryWebhookStorage } from '../../src/persistence/memory/in-memory-webhook-storage.js';
import { WebhookStorage } from '../../src/persistence/webhook-storage.js';
import type { NewInvocation } from '../../src/persistence/records.js';
import { WebhookTriggerModule, type WebhookTriggerModuleOptions } from '../../src/index.js';
import { createScratchDatabase } from '../helpers/services.js';

/** A fresh, empty `WebhookStorage` for one test, and how to throw it away. */
export interface OpenedStorage {
  storage: WebhookStorage;
  close(): Promise<void>;
  /** On PostgreSQL, the scratch database's URL (for a suite that fills it through a connection of its own). */
  postgresUrl?: string;
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
      return { ...(await openModuleStorage({ type: 'postgres', url: scratch.url }, scratch.drop)), postgresUrl: scratch.url };
    } catch (error) {
      await scratch.drop();
      throw error;
    }
  };
}

/** Times of the contract suites: `at(s)` is `s` seconds after a fixed start. */
export const at = (seconds: number): Date => new Date(Date.UTC(2026, 0, 1) + seconds * 1000);

/** Opens a fresh storage before each test of the calling `describe` (handed to `use`) and closes it after. */
export function eachFreshStorage(open: OpenStorage, use: (storage: WebhookStorage) => void): void {
  let close: () => Promise<void> = () => Promise.resolve();
  beforeEach(async () => {
    const opened = await open();
    close = opened.close;
    use(opened.storage);
  });
  afterEach(() => close());
}

/**
 * Makes new runs of bot `echo` on `triggerId` for account `acct` (1 credit), numbered in order: ids of digits
 * only, so every database orders them alike, created at `at(n)`.
 */
export function numberedRuns(triggerId: string): (fields?: Partial<NewInvocation>) => NewInvocation {
  let counter = 0;
  return (fields = {}) => {
    counter++;
    return {
      id: `inv_${String(counter).padStart(22, '0')}`,
      triggerId,
      botId: 'echo',
      accountId: 'acct',
      inputs: { n: counter },
      credits: 1,
      idempotencyKey: null,
      requestHash: null,
      createdAt: at(counter),
      ...fields,
    };
  };
}
