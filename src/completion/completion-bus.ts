/**
 * Carries "invocation X finished" to waiting sync requests, ids only; waiters read the result from the
 * repository. Replace it (e.g. with Redis pub/sub) when runs finish in another process.
 */
export abstract class CompletionBus {
  abstract publish(invocationId: string): Promise<void>;
  /** Calls `listener` when `invocationId` finishes; returns the function that unsubscribes. */
  abstract subscribe(invocationId: string, listener: () => void): () => void;
  /**
   * Calls `listener` with every id published, from any process the bus reaches: how a process learns
   * that a run it is executing was cancelled or recovered elsewhere, so it can fire the bot's signal.
   */
  abstract onAnyFinished(listener: (invocationId: string) => void): void;
}
