import { IdempotencyKeyTakenError, NotEnoughCreditsError } from '../errors/webhook-trigger.errors.js';
import type { AuditLog } from './audit-log.js';
import type { CallbackStore } from './callback-store.js';
import type { CreditAccounts } from './credit-accounts.js';
import type { CreditLedger } from './credit-ledger.js';
import type { InvocationRepository } from './invocation.repository.js';
import type { InvocationRecord, NewInvocation } from './records.js';
import type { RunOverview } from './run-overview.js';
import type { SigningSecretStore } from './signing-secret-store.js';
import type { TriggerRepository } from './trigger.repository.js';
import type { WebhookUnitOfWork } from './unit-of-work.js';

/** What the accept step decided for one run. Every answer is given after the COMMIT that holds it. */
export type AcceptOutcome =
  /** Stored `queued` and charged. */
  | { kind: 'accepted' }
  /** An earlier run holds the idempotency key on this trigger (compare its request hash): nothing stored. */
  | { kind: 'repeat'; earlier: { id: string; requestHash: string | null } }
  /** The account cannot pay (`funded` false: it was never opened): nothing stored or charged. */
  | { kind: 'refused'; funded: boolean };

/** A repeat names the earlier run by its id and request hash only, as every storage answers it (never the whole record). */
const repeatOf = ({ id, requestHash }: InvocationRecord): AcceptOutcome => ({ kind: 'repeat', earlier: { id, requestHash } });

/**
 * Where the module keeps everything: triggers, runs, credits, callbacks and their deliveries, with the unit
 * of work that makes their changes commit together, and the accept step built on them. One part, replaced
 * as a whole (the `storage` extra) or not at all: the module's SQL storage (SQLite, PostgreSQL) by default,
 * `InMemoryWebhookStorage` for tests, or a host's own. Every implementation passes the same contract suites.
 */
export abstract class WebhookStorage {
  abstract readonly triggers: TriggerRepository;
  abstract readonly invocations: InvocationRepository;
  /** Billing: debit at accept, refund on cancel. */
  abstract readonly ledger: CreditLedger;
  /** Balances as the admin reads and sets them. */
  abstract readonly accounts: CreditAccounts;
  abstract readonly callbacks: CallbackStore;
  /** Triggers' signed-request settings and signing secrets. */
  abstract readonly signing: SigningSecretStore;
  /** Who changed what in the admin, and who viewed a key (docs/security.md). */
  abstract readonly audit: AuditLog;
  /** The admin's Overview: runs per time bucket by status, percentiles, backlog and callbacks (docs/admin.md). */
  abstract readonly overview: RunOverview;
  /** The transaction every store's `tx` parameter joins. */
  abstract readonly unitOfWork: WebhookUnitOfWork;

  /**
   * Resolves once the database answered a cheap read; rejects when it cannot (the health probes' database
   * check, which bounds the wait). By default a look-up of a trigger id no trigger has; the SQL storage
   * sends `SELECT 1`.
   */
  async ping(): Promise<void> {
    await this.triggers.findActive('health-probe');
  }

  /**
   * The accept step of a trigger request, as one atomic decision: the idempotency look-up, the `queued` row and
   * the debit commit together or not at all. `since`: an idempotency key used before it has expired and is free
   * again. This one is a unit of work per request through the stores; a storage may batch (PostgreSQL does).
   */
  async accept(run: NewInvocation, since: Date): Promise<AcceptOutcome> {
    const key = run.idempotencyKey;
    try {
      return await this.unitOfWork.run(async (tx): Promise<AcceptOutcome> => {
        if (key !== null) {
          const earlier = await this.invocations.findByIdempotencyKey(run.triggerId, key, since, tx);
          if (earlier) return repeatOf(earlier);
          await this.invocations.releaseIdempotencyKey(run.triggerId, key, since, tx);
        }
        await this.invocations.insert(run, tx);
        // The debit last: on PostgreSQL it locks the account's row until COMMIT, and every trigger of the
        // account queues on that lock, so nothing else may run while it is held. Short of credits, the
        // transaction rolls back, insert included.
        if (run.credits > 0 && !(await this.ledger.tryDebit(run.accountId, run.credits, tx))) {
          throw new NotEnoughCreditsError(run.accountId, run.credits);
        }
        return { kind: 'accepted' };
      });
    } catch (error) {
      // A refused debit on an account that was never opened says so (the first-use surprise), read after the rollback.
      if (error instanceof NotEnoughCreditsError) {
        const balance = await this.accounts.getBalance(run.accountId).catch(() => 0);
        return { kind: 'refused', funded: balance !== null };
      }
      // A concurrent request with the same key committed first; its transaction, and so its charge, won.
      if (!(error instanceof IdempotencyKeyTakenError) || key === null) throw error;
      const earlier = await this.invocations.findByIdempotencyKey(run.triggerId, key, since);
      if (!earlier) throw error;
      return repeatOf(earlier);
    }
  }
}
