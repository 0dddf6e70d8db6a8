import { WebhookUnitOfWork, type WebhookTransaction } from '../unit-of-work.js';
import { InMemoryTransaction, InMemoryWebhookDatabase } from './in-memory-database.js';

/**
 * `WebhookUnitOfWork` on an `InMemoryWebhookDatabase`: one unit at a time holds the database's write lock;
 * when `work` throws, every entry the unit changed through the stores is put back as it was (no row
 * inserted, no credit taken), and the error is rethrown. `run` resolves once the unit has committed.
 */
export class InMemoryUnitOfWork extends WebhookUnitOfWork {
  constructor(private readonly database: InMemoryWebhookDatabase) {
    super();
  }

  run<T>(work: (tx: WebhookTransaction) => Promise<T>): Promise<T> {
    return this.database.exclusive(async () => {
      const tx = new InMemoryTransaction(this.database);
      try {
        const value = await work(tx);
        tx.commit();
        return value;
      } catch (error) {
        tx.rollback();
        throw error;
      }
    });
  }
}
