import { Injectable } from '@nestjs/common';
import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { BAD_ACCOUNT_ID, BAD_CREDITS } from '../../errors/webhook-trigger.messages.js';
import { ACCOUNT_ID_PATTERN } from '../../keys/ids.js';
import { CreditAccounts } from '../../persistence/credit-accounts.js';
import type { AccountCredits } from '../admin-views.js';
import { AdminAudit } from '../audit/admin-audit.js';

/** Accounts' balances for the admin. Behind `WebhookTriggersAdmin`. */
@Injectable()
export class AdminCredits {
  constructor(
    private readonly accounts: CreditAccounts,
    private readonly audit: AdminAudit,
  ) {}

  async getCredits(accountId: string): Promise<AccountCredits | null> {
    if (!ACCOUNT_ID_PATTERN.test(accountId)) return null;
    const credits = await this.accounts.getBalance(accountId);
    return credits === null ? null : { id: accountId, credits };
  }

  async setCredits(accountId: string, credits: number): Promise<AccountCredits> {
    if (typeof accountId !== 'string' || !ACCOUNT_ID_PATTERN.test(accountId)) throw new WebhookAdminInputError(BAD_ACCOUNT_ID);
    if (!Number.isSafeInteger(credits) || credits < 0) throw new WebhookAdminInputError(BAD_CREDITS);
    // Read before the change, for the audit log's "from … to …" (a concurrent debit may move it in between).
    const previous = await this.accounts.getBalance(accountId);
    await this.accounts.setBalance(accountId, credits);
    await this.audit.creditsSet(accountId, credits, previous);
    return { id: accountId, credits };
  }
}
