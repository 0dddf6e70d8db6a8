import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { RunFinisher } from '../deliveries/run-finisher.js';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import { InvocationRepository, type LostRun } from '../persistence/invocation.repository.js';
import type { InvocationRecord } from '../persistence/records.js';
import type { WebhookTransaction } from '../persistence/unit-of-work.js';
import { RunStop } from '../runs/run-stop.reasons.js';
import { Clock } from '../time/clock.js';

/**
 * The one place that decides what happens to a run whose process was lost (crashed, killed, or hung
 * past its lease or its queue lock): the bot's choice. A `retryInterrupted` bot's run goes back to
 * `queued` to run again (the caller dispatches it) while it has attempts left (`maxRunAttempts`, counted
 * by each claim); then it is stored `failed` ("interrupted_too_often"). Any other run is stored `failed`
 * ("interrupted"), so it never runs twice. A failed run's credits are kept, waiters are woken and
 * `failed` is emitted. The change is conditional on the run still being lost, so two processes settling
 * the same run agree (its attempts cannot change while it is lost: only a claim of a queued run counts
 * one), and a live owner's outcome wins.
 */
@Injectable()
export class InterruptedRuns {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly invocations: InvocationRepository,
    private readonly registry: WebhookBotRegistry,
    private readonly finisher: RunFinisher,
    @Inject(RESOLVED_OPTIONS) private readonly options: Pick<ResolvedWebhookTriggerOptions, 'maxRunAttempts'>,
    private readonly clock: Clock,
  ) {}

  /** `'requeued'` (dispatch it), `'failed'`, or null when the run was no longer lost (nothing changed). */
  async settle(run: InvocationRecord, lost: LostRun): Promise<'requeued' | 'failed' | null> {
    const retry = this.registry.get(run.botId)?.retryInterrupted === true;
    // A store that does not count attempts (undefined) gets no bound.
    const usedUp = retry && run.attempts !== undefined && run.attempts >= this.options.maxRunAttempts;
    if (retry && !usedUp) {
      if (!(await this.invocations.recoverInterrupted(run.id, lost, 'queued', {}))) return null;
      this.logger.warn(`Run ${run.id} of bot ${run.botId} was interrupted; running it again (retryInterrupted)`);
      return 'requeued';
    }
    // The outputs are left as they are: what the bot emitted before it was interrupted stays.
    const { error } = usedUp ? RunStop.interruptedTooOften(run.attempts!) : RunStop.interrupted();
    const end = { status: 'failed' as const, finishedAt: new Date(this.clock.now()), error };
    const change = (tx?: WebhookTransaction) =>
      this.invocations.recoverInterrupted(run.id, lost, 'failed', { finishedAt: end.finishedAt, error }, tx);
    const failed = await this.finisher.finish(run, end, change);
    if (!failed) return null;
    this.logger.warn(
      usedUp
        ? `Run ${run.id} of bot ${run.botId} was interrupted on each of its ${run.attempts} attempts (maxRunAttempts); stored failed`
        : `Run ${run.id} of bot ${run.botId} was interrupted; stored failed`,
    );
    return 'failed';
  }
}
