import { CreditAccounts } from '../credit-accounts.js';
import { CreditLedger } from '../credit-ledger.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { SqlExecutor } from './sql-executor.js';

/** Billing on the `webhook_accounts` table. */
export class SqlCreditLedger extends CreditLedger {
  constructor(private readonly db: SqlExecutor) {
    super();
  }

  /** One conditional UPDATE, no read-modify-write: concurrent debits can never take a balance below zero. */
  async tryDebit(accountId: string, amount: number, tx?: WebhookTransaction): Promise<boolean> {
    const { changes } = await this.db.write(
      `UPDATE webhook_accounts SET credits = credits - ? WHERE id = ? AND credits >= ?`,
      [amount, accountId, amount],
      tx,
    );
    return changes === 1;
  }

  async refund(accountId: string, amount: number, tx?: WebhookTransaction): Promise<void> {
    await this.db.write(`UPDATE webhook_accounts SET credits = credits + ? WHERE id = ?`, [amount, accountId], tx);
  }
}

/** Balances on the `webhook_accounts` table, for the admin service. */
export class SqlCreditAccounts extends CreditAccounts {
  constructor(private readonly db: SqlExecutor) {
    super();
  }

  async getBalance(accountId: string): Promise<number | null> {
    const { rows } = await this.db.read(`SELECT credits FROM webhook_accounts WHERE id = ?`, [accountId]);
    return rows[0] ? Number(rows[0].credits) : null;
  }

  async openAccount(accountId: string, credits: number): Promise<boolean> {
    const { changes } = await this.db.write(`INSERT INTO webhook_accounts (id, credits) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, [
      accountId,
      credits,
    ]);
    return changes === 1;
  }

  async setBalance(accountId: string, credits: number): Promise<void> {
    await this.db.write(
      `INSERT INTO webhook_accounts (id, credits) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET credits = excluded.credits`,
      [accountId, credits],
    );
  }
}
