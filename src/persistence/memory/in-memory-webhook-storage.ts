import type { AuditLog } from '../audit-log.js';
import type { CallbackStore } from '../callback-store.js';
import type { CreditAccounts } from '../credit-accounts.js';
import type { CreditLedger } from '../credit-ledger.js';
import type { InvocationRepository } from '../invocation.repository.js';
import type { RunOverview } from '../run-overview.js';
import type { SigningSecretStore } from '../signing-secret-store.js';
import type { TriggerRepository } from '../trigger.repository.js';
import type { WebhookUnitOfWork } from '../unit-of-work.js';
import { WebhookStorage } from '../webhook-storage.js';
import { InMemoryAuditLog } from './in-memory-audit-log.js';
import { InMemoryCallbackStore } from './in-memory-callback.store.js';
import { InMemoryCreditAccounts, InMemoryCreditLedger } from './in-memory-credit-ledger.js';
import { InMemoryWebhookDatabase } from './in-memory-database.js';
import { InMemoryInvocationRepository } from './in-memory-invocation.repository.js';
import { InMemoryRunOverview } from './in-memory-run-overview.js';
import { InMemorySigningSecretStore } from './in-memory-signing-secret.store.js';
import { InMemoryTriggerRepository } from './in-memory-trigger.repository.js';
import { InMemoryUnitOfWork } from './in-memory-unit-of-work.js';

/**
 * The whole storage in this process's memory, gone when it ends: for tests (the `storage` extra:
 * `storage: new InMemoryWebhookStorage()`), and a reference for writing your own. It passes the same contract
 * suites as the SQL storage: one write lock, units of work that roll back exactly, conditional changes.
 */
export class InMemoryWebhookStorage extends WebhookStorage {
  // Typed as the contracts, so a subclass may replace one part (e.g. `override readonly ledger = new MyBilling()`).
  readonly triggers: TriggerRepository;
  readonly invocations: InvocationRepository;
  readonly ledger: CreditLedger;
  readonly accounts: CreditAccounts;
  readonly callbacks: CallbackStore;
  readonly signing: SigningSecretStore;
  readonly audit: AuditLog;
  readonly overview: RunOverview;
  readonly unitOfWork: WebhookUnitOfWork;

  constructor(readonly database: InMemoryWebhookDatabase = new InMemoryWebhookDatabase()) {
    super();
    this.triggers = new InMemoryTriggerRepository(database);
    this.invocations = new InMemoryInvocationRepository(database);
    this.ledger = new InMemoryCreditLedger(database);
    this.accounts = new InMemoryCreditAccounts(database);
    this.callbacks = new InMemoryCallbackStore(database);
    this.signing = new InMemorySigningSecretStore(database);
    this.audit = new InMemoryAuditLog(database);
    this.overview = new InMemoryRunOverview(database);
    this.unitOfWork = new InMemoryUnitOfWork(database);
  }
}
