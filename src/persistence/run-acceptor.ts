import { Injectable } from '@nestjs/common';
import { IdempotencyKeyTakenError, NotEnoughCreditsError } from '../errors/webhook-trigger.errors.js';
import { CreditAccounts } from './credit-accounts.js';
import { CreditLedger } from './credit-ledger.js';
import { InvocationRepository } from './invocation.repository.js';
import type { NewInvocation } from './records.js';
import { WebhookUnitOfWork } from './unit-of-work.js';

/** What the accept step decided for one run. Every answer is given after the COMMIT that holds it. */
export type AcceptOutcome =
  /** Stored `queued` and charged. */
  | { kind: 'accepted' }
  /** An earlier run holds the idempotency key on this trigger (compare its request hash): nothing stored. */
  | { kind: 'repeat'; earlier: { id: string; requestHash: string | null } }
  /** The account cannot pay (`funded` false: it was never opened): nothing stored or charged. */
  | { kind: 'refused'; funded: boolean };

/**
 * The accept step of a trigger request, as one atomic decision: the idempotency look-up, the `queued`
 * row and the debit commit together or not at all. `since`: an idempotency key used before it has
 * expired and is free again. Internal: the module picks the implementation for its stores.
 */
export abstract class RunAcceptor {
  abstract accept(run: NewInvocation, since: Date): Promise<AcceptOutcome>;
}

/**
 * One unit of work per request, through the store contracts, so it holds for any stores a host brings
 * (on the module's SQLite file the units of one tick already share a commit: `SqliteExecutor`).
 */
@Injectable()
export class TransactionalRunAcceptor extends RunAcceptor {
  constructor(
    private readonly unitOfWork: WebhookUnitOfWork,
    private readonly invocations: InvocationRepository,
    private readonly ledger: CreditLedger,
    private readonly accounts: CreditAccounts,
  ) {
    super();
  }

  async accept(run: NewInvocation, since: Date): Promise<AcceptOutcome> {
    const key = run.idempotencyKey;
    try {
      return await this.unitOfWork.run(async (tx): Promise<AcceptOutcome> => {
        if (key !== null) {
          const earlier = await this.invocations.findByIdempotencyKey(run.triggerId, key, since, tx);
          if (earlier) return { kind: 'repeat', earlier };
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
      return { kind: 'repeat', earlier };
    }
  }
}
