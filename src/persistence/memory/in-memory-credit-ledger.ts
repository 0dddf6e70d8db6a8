import { CreditAccounts } from '../credit-accounts.js';
import { CreditLedger } from '../credit-ledger.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import type { InMemoryWebhookDatabase } from './in-memory-database.js';

/**
 * `CreditLedger` on the balances of an `InMemoryWebhookDatabase`. The check and the debit happen in one
 * synchronous step, so concurrent debits can never take a balance below zero; with a `tx`, a failed
 * unit gives the credits back.
 */
export class InMemoryCreditLedger extends CreditLedger {
  constructor(private readonly database: InMemoryWebhookDatabase) {
    super();
  }

  tryDebit(accountId: string, amount: number, tx?: WebhookTransaction): Promise<boolean> {
    return this.database.write(tx, (unit) => {
      const balance = this.database.balances.get(accountId);
      if (balance === undefined || balance < amount) return false;
      unit?.remember('balances', this.database.balances, accountId);
      this.database.balances.set(accountId, balance - amount);
      return true;
    });
  }

  refund(accountId: string, amount: number, tx?: WebhookTransaction): Promise<void> {
    return this.database.write(tx, (unit) => {
      const balance = this.database.balances.get(accountId);
      if (balance === undefined) return; // like the SQL ledger's UPDATE: an unknown account is not created
      unit?.remember('balances', this.database.balances, accountId);
      this.database.balances.set(accountId, balance + amount);
    });
  }
}

/** `CreditAccounts` on the same balances as `InMemoryCreditLedger` (give both the same database). */
export class InMemoryCreditAccounts extends CreditAccounts {
  constructor(private readonly database: InMemoryWebhookDatabase) {
    super();
  }

  async getBalance(accountId: string): Promise<number | null> {
    return this.database.balances.get(accountId) ?? null;
  }

  openAccount(accountId: string, credits: number): Promise<boolean> {
    return this.database.write(undefined, () => {
      if (this.database.balances.has(accountId)) return false;
      this.database.balances.set(accountId, credits);
      return true;
    });
  }

  setBalance(accountId: string, credits: number): Promise<void> {
    return this.database.write(undefined, () => {
      // The SQL table's CHECK (credits >= 0): a store must not hold what the real one refuses.
      if (!Number.isSafeInteger(credits) || credits < 0) throw new Error(`Invalid balance ${credits} for account ${accountId}`);
      this.database.balances.set(accountId, credits);
    });
  }
}
