import { storageContract } from './storage.contract.js';
import { openInMemoryStorage, openSqliteStorage } from './storages.js';

// PostgreSQL runs the same contract in the services project (test/services/postgres-storage.e2e-spec.ts).
storageContract('in memory (InMemoryWebhookStorage)', openInMemoryStorage);
storageContract("SQL on SQLite (the module's own database)", openSqliteStorage);
