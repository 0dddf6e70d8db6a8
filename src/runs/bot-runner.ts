/**
 * What a runner is handed: the run's id, and the account whose runs it counts against
 * `maxConcurrentRunsPerAccount`.
 */
export interface DispatchedRun {
  id: string;
  accountId: string;
}

/**
 * Where runs happen. `dispatch` must be safe to call twice for one run: the executor's conditional
 * state change turns the second call into a no-op.
 */
export abstract class BotRunner {
  abstract dispatch(run: DispatchedRun): Promise<void>;

  /**
   * Runs dispatched and not started yet, as this runner sees them: what `maxQueuedRuns` bounds (a trigger
   * is answered 503 once it is reached). Called on every trigger, so it must answer from memory, never
   * wait on a service. A runner that does not count (the default) is never full.
   */
  backlog(): number {
    return 0;
  }

  /**
   * True (on the class) when dispatched runs outlive this process and execute wherever the runner's
   * workers are (a queue in Redis), and the runner finds `queued` runs that never reached it by itself.
   * Then startup does not re-dispatch every queued run one by one, and an `'api'` process may use it.
   */
  static readonly durable: boolean = false;
}
