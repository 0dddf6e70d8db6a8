import { storageContract } from '../contracts/storage.contract.js';
import { postgresStorage } from '../contracts/storages.js';
import { serviceUrl } from '../helpers/services.js';

const baseUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

// The contract the in-memory storage and SQLite pass (test/contracts/storage.spec.ts), on PostgreSQL: each
// test on a scratch database the module migrates, through its batched accept step.
if (!baseUrl) {
  it.todo('PostgreSQL storage contract NOT RUN: set WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test');
} else {
  storageContract("SQL on PostgreSQL (the module's own database)", postgresStorage(baseUrl));
}
