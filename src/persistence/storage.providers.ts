import type { Provider, Type } from '@nestjs/common';
import { AuditLog } from './audit-log.js';
import { CallbackStore } from './callback-store.js';
import { CreditAccounts } from './credit-accounts.js';
import { CreditLedger } from './credit-ledger.js';
import { InvocationRepository } from './invocation.repository.js';
import { RunOverview } from './run-overview.js';
import { SigningSecretStore } from './signing-secret-store.js';
import { sqlWebhookStorageProvider } from './sql/sql-webhook-storage.js';
import { TriggerRepository } from './trigger.repository.js';
import { dataSourceProviders } from './typeorm/webhook-data-source.js';
import { WebhookUnitOfWork } from './unit-of-work.js';
import { WebhookStorage } from './webhook-storage.js';

/** Each store the parts inject, taken from the one storage, so they can never come from two. */
const STORES: [abstract new (...args: never[]) => unknown, (storage: WebhookStorage) => unknown][] = [
  [TriggerRepository, (s) => s.triggers],
  [InvocationRepository, (s) => s.invocations],
  [CreditLedger, (s) => s.ledger],
  [CreditAccounts, (s) => s.accounts],
  [CallbackStore, (s) => s.callbacks],
  [SigningSecretStore, (s) => s.signing],
  [AuditLog, (s) => s.audit],
  [RunOverview, (s) => s.overview],
  [WebhookUnitOfWork, (s) => s.unitOfWork],
];

/**
 * `WebhookStorage` and the stores in it: the host's storage (a class or an instance), or the module's SQL
 * storage on its DataSource (the host's named one, or its own database).
 */
export function webhookStorageProviders(
  storage: Type<WebhookStorage> | WebhookStorage | undefined,
  dataSourceName: string | undefined,
): Provider[] {
  const chosen: Provider[] =
    storage === undefined
      ? [...dataSourceProviders(dataSourceName), sqlWebhookStorageProvider]
      : [typeof storage === 'function' ? { provide: WebhookStorage, useClass: storage } : { provide: WebhookStorage, useValue: storage }];
  return [...chosen, ...STORES.map(([token, pick]): Provider => ({ provide: token, inject: [WebhookStorage], useFactory: pick }))];
}
