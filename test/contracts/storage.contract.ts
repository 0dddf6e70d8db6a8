import { acceptContract } from './accept.contract.js';
import { auditLogContract } from './audit-log.contract.js';
import { callbackStoreContract } from './callback-store.contract.js';
import { invocationHistoryContract } from './invocation-history.contract.js';
import { runOverviewContract } from './run-overview.contract.js';
import { signingSecretStoreContract } from './signing-secret-store.contract.js';
import { storeContract } from './store.contract.js';
import { triggerKeysContract } from './trigger-keys.contract.js';
import type { OpenStorage } from './storages.js';

/**
 * Every contract suite of `WebhookStorage` on one implementation, each test on a fresh storage from `open`:
 * the stores (runs, triggers, credits, unit of work), the run history queries, the callbacks and their
 * deliveries, the accept step and the admin's Overview. The in-memory storage and SQLite run it in test/contracts/storage.spec.ts,
 * PostgreSQL in test/services/postgres-storage.e2e-spec.ts: an implementation is only worth what this proves.
 */
export function storageContract(name: string, open: OpenStorage): void {
  describe(`WebhookStorage contract: ${name}`, () => {
    describe('stores', () => storeContract(open));
    describe('trigger keys', () => triggerKeysContract(open));
    describe('invocation history', () => invocationHistoryContract(open));
    describe('CallbackStore', () => callbackStoreContract(open));
    describe('SigningSecretStore', () => signingSecretStoreContract(open));
    describe('accept', () => acceptContract(open));
    describe('AuditLog', () => auditLogContract(open));
    describe('RunOverview', () => runOverviewContract(open));
  });
}
