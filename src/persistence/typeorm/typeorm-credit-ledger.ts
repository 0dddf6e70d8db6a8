import { Injectable } from '@nestjs/common';
import { CreditLedger } from '../credit-ledger.js';
import { WebhookAccountEntity } from './entities.js';
import { TypeOrmUnitOfWork } from './typeorm-unit-of-work.js';

@Injectable()
export class TypeOrmCreditLedger extends CreditLedger {
  constructor(private readonly db: TypeOrmUnitOfWork) {
    super();
  }

  /** One conditional UPDATE: concurrent debits can never take the balance below zero. */
  tryDebit(accountId: string, amount: number): Promise<boolean> {
    return this.db.use(async (m) => {
      const result = await m
        .createQueryBuilder()
        .update(WebhookAccountEntity)
        .set({ credits: () => `"credits" - :amount` })
        .where('"id" = :accountId AND "credits" >= :amount', { accountId, amount })
        .setParameter('amount', amount)
        .execute();
      return (result.affected ?? 0) === 1;
    });
  }

  getBalance(accountId: string): Promise<number | null> {
    return this.db.use(async (m) => {
      const row = await m.findOneBy(WebhookAccountEntity, { id: accountId });
      return row ? row.credits : null;
    });
  }

  setBalance(accountId: string, credits: number): Promise<void> {
    return this.db.use(async (m) => {
      await m.upsert(WebhookAccountEntity, { id: accountId, credits }, ['id']);
    });
  }
}
