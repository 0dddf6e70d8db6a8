import type { WebhookTransaction } from './unit-of-work.js';

/**
 * Billing: what a run costs is taken when it is accepted and given back when it is cancelled before it
 * started. Replace this (with `CreditAccounts`, which the admin service reads) to bill runs through your
 * own system.
 */
export abstract class CreditLedger {
  /**
   * Atomically takes `amount` from the account if it holds at least that much; false otherwise (also
   * for an unknown account). With `tx`, the debit commits or rolls back with that transaction.
   */
  abstract tryDebit(accountId: string, amount: number, tx?: WebhookTransaction): Promise<boolean>;
  /** Gives `amount` back (a cancelled run that never started). With `tx`, commits with it. */
  abstract refund(accountId: string, amount: number, tx?: WebhookTransaction): Promise<void>;
}
