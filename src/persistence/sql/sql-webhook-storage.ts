import type { Provider } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { Clock } from '../../time/clock.js';
import type { NewInvocation } from '../records.js';
import { sqliteConnectionOf, WEBHOOK_DATA_SOURCE } from '../typeorm/webhook-data-source.js';
import { WebhookStorage, type AcceptOutcome } from '../webhook-storage.js';
import { PostgresExecutor } from './postgres-executor.js';
import { PostgresRunAcceptor } from './postgres-run-acceptor.js';
import { SqlAuditLog } from './sql-audit-log.js';
import { SqlCallbackStore } from './sql-callback.store.js';
import { SqlCreditAccounts, SqlCreditLedger } from './sql-credit-ledger.js';
import type { SqlExecutor } from './sql-executor.js';
import { SqlInvocationRepository } from './sql-invocation.repository.js';
import { SqlRunOverview } from './sql-run-overview.js';
import { SqlSigningSecretStore } from './sql-signing-secret.store.js';
import { SqlTriggerRepository } from './sql-trigger.repository.js';
import { SqliteExecutor } from './sqlite-executor.js';

/**
 * The module's own storage on its DataSource: the SQL stores on one executor, which is also their unit of work
 * (one SQLite write queue with group commit, or pooled PostgreSQL transactions).
 */
export class SqlWebhookStorage extends WebhookStorage {
  readonly triggers: SqlTriggerRepository;
  readonly invocations: SqlInvocationRepository;
  readonly ledger: SqlCreditLedger;
  readonly accounts: SqlCreditAccounts;
  readonly callbacks: SqlCallbackStore;
  readonly signing: SqlSigningSecretStore;
  readonly audit: SqlAuditLog;
  readonly overview: SqlRunOverview;

  constructor(readonly unitOfWork: SqlExecutor) {
    super();
    this.triggers = new SqlTriggerRepository(unitOfWork);
    this.invocations = new SqlInvocationRepository(unitOfWork);
    this.ledger = new SqlCreditLedger(unitOfWork);
    this.accounts = new SqlCreditAccounts(unitOfWork);
    this.callbacks = new SqlCallbackStore(unitOfWork);
    this.signing = new SqlSigningSecretStore(unitOfWork);
    this.audit = new SqlAuditLog(unitOfWork);
    this.overview = new SqlRunOverview(unitOfWork);
  }

  override async ping(): Promise<void> {
    await this.unitOfWork.read('SELECT 1 AS one', []);
  }
}

/**
 * On PostgreSQL the accept step batches: one transaction for the requests that arrived while the previous one
 * was in flight (`PostgresRunAcceptor`), each decided as if alone.
 */
export class PostgresWebhookStorage extends SqlWebhookStorage {
  private readonly acceptor: PostgresRunAcceptor;

  constructor(
    override readonly unitOfWork: PostgresExecutor,
    clock: Clock,
  ) {
    super(unitOfWork);
    this.acceptor = new PostgresRunAcceptor(unitOfWork, () => this.invocations.claimsInFlight(), clock);
  }

  override accept(run: NewInvocation, since: Date): Promise<AcceptOutcome> {
    return this.acceptor.accept(run, since);
  }
}

/** `WebhookStorage` on the module's DataSource: PostgreSQL, or the module's own SQLite file. */
export const sqlWebhookStorageProvider: Provider = {
  provide: WebhookStorage,
  inject: [WEBHOOK_DATA_SOURCE, Clock],
  useFactory: (dataSource: DataSource, clock: Clock): WebhookStorage =>
    dataSource.options.type === 'postgres'
      ? new PostgresWebhookStorage(new PostgresExecutor(dataSource), clock)
      : new SqlWebhookStorage(new SqliteExecutor(sqliteConnectionOf(dataSource))),
};
