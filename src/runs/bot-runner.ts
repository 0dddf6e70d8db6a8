import type { ServiceCheck } from '../health/service-check.js';
import type { InvocationRecord } from '../persistence/records.js';

/**
 * What a runner is handed: the run's id, and the account whose runs it counts against
 * `maxConcurrentRunsPerAccount`.
 */
export interface DispatchedRun {
  id: string;
  accountId: string;
  /** The trigger request's trace context (`InvocationRecord.traceContext`), for a runner that carries it (BullMQ's job). */
  traceContext?: string;
}

/** A run as a runner is handed it: the trace context only when one was recorded. */
export function dispatchedRun(run: Pick<InvocationRecord, 'id' | 'accountId' | 'traceContext'>): DispatchedRun {
  return run.traceContext
    ? { id: run.id, accountId: run.accountId, traceContext: run.traceContext }
    : { id: run.id, accountId: run.accountId };
}

/** Worker processes that took part recently: `workers` seen within the last `withinMs`. */
export interface WorkersSeen {
  workers: number;
  withinMs: number;
}

/**
 * A slot this process holds for a run being accepted (`BotRunner.reserve`): the accept step stores the run
 * `running`, owned by `owner`, so no claim is needed; then `start` runs it in that slot, or `release` gives
 * the slot back when nothing was stored (refused, a repeat, an error).
 */
export interface RunReservation {
  /** The process that will run it (`InvocationExecutor.owner`): the run's owner as stored. */
  readonly owner: string;
  /** Runs the run its accept step stored `running` for this reservation. */
  start(run: InvocationRecord): void;
  release(): void;
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
   * Of `backlog()`, the runs of one account: what its share of `maxQueuedRuns` bounds when the bots belong to
   * more than one account (half of it; past that, a trigger of the account is answered 429), so one account
   * cannot fill the backlog for every other. Answered from memory on every trigger. `RunBacklog` adds the account's
   * runs waiting to be dispatched again, as it does for the whole. A runner that does not count per account (the
   * default: 0) sets no share of its own backlog.
   */
  backlogOf(accountId: string): number {
    void accountId;
    return 0;
  }

  /**
   * True while runs this process dispatched wait for one of its own slots: it is behind on its runs, and its
   * accept step then lets its claims in flight go before new accepts (PostgreSQL). Answered from memory on
   * every trigger. False (the default) for a runner whose runs wait elsewhere (a shared queue).
   */
  behind(): boolean {
    return false;
  }

  /**
   * A slot for a run about to be accepted, when this process may start it at once (a free slot and nobody
   * waiting for one), so that the accept step stores it `running` (accept-as-running: no claim round trip).
   * Null (the default) sends every run the usual way: stored `queued`, then `dispatch`.
   */
  reserve(_accountId: string): RunReservation | null {
    return null;
  }

  /** The outside services this runner relies on (a queue's Redis), for the health probes. None by default. */
  serviceChecks(): readonly ServiceCheck[] {
    return [];
  }

  /**
   * Worker processes seen recently taking this runner's runs, for the health probes of an `'api'` node;
   * null (the default) when runs execute in the process that accepts them, so there are no workers to see.
   */
  async workersSeen(): Promise<WorkersSeen | null> {
    return null;
  }

  /**
   * True (on the class) when dispatched runs outlive this process and execute wherever the runner's
   * workers are (a queue in Redis), and the runner finds `queued` runs that never reached it by itself.
   * Then startup does not re-dispatch every queued run one by one, and an `'api'` process may use it.
   */
  static readonly durable: boolean = false;
}
