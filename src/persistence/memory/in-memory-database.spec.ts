import type { WebhookTransaction } from '../unit-of-work.js';
import { InMemoryCreditAccounts, InMemoryCreditLedger } from './in-memory-credit-ledger.js';
import { InMemoryWebhookDatabase } from './in-memory-database.js';
import { InMemoryUnitOfWork } from './in-memory-unit-of-work.js';
import { deferred } from '../../../test/fakes/webhook-fakes.js';

/** What the fakes promise beyond the shared contract checks (test/contracts/, run on every storage). */
describe('InMemoryWebhookDatabase', () => {
  let database: InMemoryWebhookDatabase;
  let ledger: InMemoryCreditLedger;
  let accounts: InMemoryCreditAccounts;
  let unitOfWork: InMemoryUnitOfWork;

  beforeEach(async () => {
    database = new InMemoryWebhookDatabase();
    ledger = new InMemoryCreditLedger(database);
    accounts = new InMemoryCreditAccounts(database);
    unitOfWork = new InMemoryUnitOfWork(database);
    await accounts.setBalance('acct', 10);
  });

  it('makes a write outside a unit wait for the unit, so rolling the unit back never undoes it', async () => {
    const release = deferred();
    const unit = unitOfWork.run(async (tx) => {
      await ledger.tryDebit('acct', 2, tx);
      await release.promise;
      throw new Error('unit failed');
    });
    const order: string[] = [];
    const outside = ledger.tryDebit('acct', 3).then((ok) => order.push(`outside ${ok}`));
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    expect(await accounts.getBalance('acct')).toBe(8); // reads do not wait: they see the unit in progress
    release.resolve();
    await expect(unit).rejects.toThrow('unit failed');
    await outside;
    expect(order).toEqual(['outside true']);
    expect(await accounts.getBalance('acct')).toBe(7);
  });

  it('refuses a transaction once its unit has ended, and one from another database', async () => {
    let kept!: WebhookTransaction;
    await unitOfWork.run(async (tx) => {
      kept = tx;
    });
    await expect(ledger.tryDebit('acct', 1, kept)).rejects.toThrow('already committed or rolled back');
    const other = new InMemoryUnitOfWork(new InMemoryWebhookDatabase());
    await expect(other.run((tx) => ledger.tryDebit('acct', 1, tx))).rejects.toThrow('their own InMemoryWebhookDatabase');
    await expect(ledger.tryDebit('acct', 1, { __webhookTransaction: true })).rejects.toThrow('their own InMemoryWebhookDatabase');
    expect(await accounts.getBalance('acct')).toBe(10);
  });
});
