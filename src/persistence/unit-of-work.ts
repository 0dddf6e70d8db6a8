/**
 * The transaction boundary around the stores: everything `work` does through the repositories and
 * the ledger commits together or not at all. Replace it together with the stores.
 */
export abstract class WebhookUnitOfWork {
  abstract run<T>(work: () => Promise<T>): Promise<T>;
}
