/**
 * An open transaction, handed to the `work` of `WebhookUnitOfWork.run()`. Opaque on purpose: pass it on
 * to the stores' methods that take one, so they join the transaction; stores of another system
 * (e.g. your own billing ledger) may ignore it.
 */
export interface WebhookTransaction {
  readonly __webhookTransaction: true;
}

/**
 * The transaction boundary around the stores: everything `work` does through the repositories and the
 * ledger with the given transaction commits together or not at all, and `run` resolves only once it
 * has committed. Replace it together with the stores.
 */
export abstract class WebhookUnitOfWork {
  abstract run<T>(work: (tx: WebhookTransaction) => Promise<T>): Promise<T>;
}
