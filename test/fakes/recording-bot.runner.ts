import { BotRunner, type DispatchedRun } from '../../src/runs/bot-runner.js';
import type { InvocationExecutor } from '../../src/runs/invocation.executor.js';

/**
 * A `BotRunner` that runs nothing by itself: it records every dispatched id, and `runPending()` runs
 * them through the executor when the test says so. `dispatch` twice with one id records it twice; the
 * executor's conditional claim makes the second run a no-op, as the contract requires of every runner.
 */
export class RecordingBotRunner extends BotRunner {
  /** Every id dispatched, in order, repeats included. */
  readonly dispatched: string[] = [];
  /** Every run dispatched, with its account, in order. */
  readonly dispatchedRuns: DispatchedRun[] = [];
  private readonly pending: string[] = [];

  constructor(private readonly executor?: InvocationExecutor) {
    super();
  }

  async dispatch(run: DispatchedRun): Promise<void> {
    this.dispatched.push(run.id);
    this.dispatchedRuns.push(run);
    this.pending.push(run.id);
  }

  /** Dispatched and not yet run: what `maxQueuedRuns` bounds. */
  override backlog(): number {
    return this.pending.length;
  }

  /** Its runs wait here, for `runPending()`. */
  override behind(): boolean {
    return this.pending.length > 0;
  }

  /** Ids dispatched and not yet run. */
  get pendingIds(): readonly string[] {
    return this.pending;
  }

  /**
   * Executes the pending ids one after the other (and those dispatched meanwhile) until none is left;
   * resolves when the last run has been stored. Returns the ids it ran.
   */
  async runPending(): Promise<string[]> {
    if (!this.executor) throw new Error('RecordingBotRunner was made without an executor: construct it with one to run dispatched ids');
    const ran: string[] = [];
    for (let id = this.pending.shift(); id !== undefined; id = this.pending.shift()) {
      await this.executor.execute(id);
      ran.push(id);
    }
    return ran;
  }
}
