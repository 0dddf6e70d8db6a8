import type { WebhookTransaction } from './unit-of-work.js';

/** Account credits. Replace this alone to bill runs through your own system. */
export abstract class CreditLedger {
  /**
   * Atomically takes `amount` from the account if it holds at least that much; false otherwise.
   * With `tx`, the debit commits or rolls back with that transaction.
   */
  abstract tryDebit(accountId: string, amount: number, tx?: WebhookTransaction): Promise<boolean>;
  /** Gives `amount` back (a cancelled run that never started). With `tx`, commits with it. */
  abstract refund(accountId: string, amount: number, tx?: WebhookTransaction): Promise<void>;
  /** The balance, or null for an unknown account. */
  abstract getBalance(accountId: string): Promise<number | null>;
  /** Sets the balance, creating the account if needed. */
  abstract setBalance(accountId: string, credits: number): Promise<void>;
}
