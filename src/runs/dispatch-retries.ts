import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { Clock, type ClockTimer } from '../time/clock.js';
import type { BotRunner, DispatchedRun } from './bot-runner.js';

/** The wait before a run's first retry; it doubles with each failure, up to `runLeaseMs`. */
const FIRST_RETRY_MS = 500;

/**
 * Runs accepted and charged whose start failed in this process (the runner's `dispatch` threw, or the in-process
 * runner's claim met a database error) are dispatched again, after a wait that doubles with each failure of the
 * run (0.5 s, 1 s, 2 s … up to `runLeaseMs`), until the start takes. Safe whatever happened: `dispatch` may be
 * called twice for a run, and its claim is conditional on the run still being `queued`. Shutdown drops the waits:
 * the runs are still `queued` in the database, and the next start dispatches them.
 */
@Injectable()
export class DispatchRetries implements OnApplicationShutdown {
  private readonly logger = new Logger(LOG_CONTEXT);
  /** Failures so far of the runs being retried (forgotten once a start takes or the run is given up: `forget`). */
  private readonly failures = new Map<string, number>();
  private readonly timers = new Set<ClockTimer>();
  /** Of the runs waiting for their next dispatch, how many each account has (an account leaves at none). */
  private readonly pendingByAccount = new Map<string, number>();
  private stopped = false;

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    private readonly clock: Clock,
  ) {}

  /**
   * Hands a run that is committed and charged to `runner`; never rejects: when the runner throws (a host's runner
   * whose service is down), the run is dispatched again later, and the caller goes on as if it had taken.
   */
  async dispatchTo(runner: BotRunner, run: DispatchedRun): Promise<void> {
    try {
      await runner.dispatch(run);
    } catch (error) {
      this.later(run, (again) => runner.dispatch(again).then(() => this.forget(again.id)), error);
    }
  }

  /** `run`'s start failed with `error`: `dispatch` is called again after the run's next wait (and again if it rejects). */
  later(run: DispatchedRun, dispatch: (run: DispatchedRun) => Promise<void>, error: unknown): void {
    if (this.stopped) return;
    const failures = (this.failures.get(run.id) ?? 0) + 1;
    this.failures.set(run.id, failures);
    const waitMs = Math.min(FIRST_RETRY_MS * 2 ** Math.min(failures - 1, 30), this.options.runLeaseMs);
    // Logged at its 1st, 2nd, 4th, 8th … failure: a runner down for long does not write a line per run per wait.
    if ((failures & (failures - 1)) === 0) {
      const reason = error instanceof Error ? error.message : String(error);
      this.logger.warn(`Run ${run.id} could not be started (${reason}, failure ${failures}); dispatching it again in ${waitMs} ms`);
    }
    const timer = this.clock.setTimer(
      () => {
        this.timers.delete(timer);
        this.countOff(run.accountId);
        if (this.stopped) return;
        dispatch(run).catch((again: unknown) => this.later(run, dispatch, again));
      },
      waitMs,
      { unref: true },
    );
    this.timers.add(timer);
    this.pendingByAccount.set(run.accountId, (this.pendingByAccount.get(run.accountId) ?? 0) + 1);
  }

  private countOff(accountId: string): void {
    const left = (this.pendingByAccount.get(accountId) ?? 1) - 1;
    if (left > 0) this.pendingByAccount.set(accountId, left);
    else this.pendingByAccount.delete(accountId);
  }

  /** Runs waiting here for their next dispatch: counted in the backlog `maxQueuedRuns` bounds (`RunBacklog`). */
  get pending(): number {
    return this.timers.size;
  }

  /** Of those, the account's: counted in its share of the backlog (`RunBacklog`). */
  pendingOf(accountId: string): number {
    return this.pendingByAccount.get(accountId) ?? 0;
  }

  /**
   * `runId` no longer waits on a retry here, and its failures are forgotten: a start took (it ran, or its claim found
   * it started, ended or cancelled elsewhere), or the runner gave it up (claimed, but its start or outcome could not
   * be stored: recovery settles it). So a run's entry lasts only while something retries it (or until shutdown).
   */
  forget(runId: string): void {
    if (this.failures.size > 0) this.failures.delete(runId);
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    for (const timer of this.timers) timer.clear();
    this.timers.clear();
    this.pendingByAccount.clear();
    this.failures.clear();
  }
}
