import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import { BotRunner, dispatchedRun } from '../runs/bot-runner.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import { InterruptedRuns } from './interrupted-runs.js';
import { InvocationExecutor } from '../runs/invocation.executor.js';
import { ShutdownState } from './shutdown.state.js';
import { DispatchRetries } from '../runs/dispatch-retries.js';
import { Clock } from '../time/clock.js';

/** Ids and accounts only, so even a large backlog is one cheap query. */
const MAX_RECOVERED = 100_000;

/**
 * Nothing accepted is lost, nothing is run twice by accident:
 * - at startup, runs left `queued` (accepted and charged, never started) are dispatched (a durable
 *   runner, such as BullMQ's, finds those that never reached its queue with its own sweep);
 * - an `'api'` process runs nothing and leaves all of this to the processes that run bots;
 * - every third of `runLeaseMs`, this process renews the leases of its own runs, and runs whose lease
 *   ran out (their process died or hung) are recovered: run again if their bot opted in with
 *   `retryInterrupted`, otherwise stored `failed` ("interrupted"). A run whose owner is alive keeps a
 *   fresh lease and is never touched; every change is conditional, so two recovering processes agree.
 */
@Injectable()
export class LeaseRecovery implements OnApplicationBootstrap {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly invocations: InvocationRepository,
    private readonly runner: BotRunner,
    private readonly executor: InvocationExecutor,
    private readonly interrupted: InterruptedRuns,
    private readonly shutdown: ShutdownState,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    private readonly clock: Clock,
    private readonly retries: DispatchRetries,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // An API-only process runs nothing, so it has no leases to renew; the workers recover.
    if (this.options.role === 'api') return;
    if (!(this.runner.constructor as typeof BotRunner).durable) {
      const queued = await this.invocations.listQueued(MAX_RECOVERED);
      if (queued.length > 0) this.logger.log(`Dispatching ${queued.length} run(s) left queued by an earlier process`);
      for (const run of queued) await this.runner.dispatch(run);
    }
    await this.recoverExpired();
    this.shutdown.every(Math.max(50, Math.floor(this.options.runLeaseMs / 3)), () => this.tick());
  }

  private async tick(): Promise<void> {
    try {
      await this.executor.renewLeases();
      await this.recoverExpired();
    } catch (error) {
      this.logger.error(
        'Lease renewal or recovery failed; retrying on the next tick',
        error instanceof Error ? error.stack : String(error),
      );
    }
  }

  /** Recovers runs whose lease has expired; returns how many. */
  async recoverExpired(): Promise<number> {
    const now = new Date(this.clock.now());
    let recovered = 0;
    for (const run of await this.invocations.listExpiredLeases(now, 1000)) {
      const settled = await this.interrupted.settle(run, { leaseExpiredBefore: now });
      if (settled === 'requeued') await this.retries.dispatchTo(this.runner, dispatchedRun(run));
      if (settled) recovered++;
    }
    return recovered;
  }
}
