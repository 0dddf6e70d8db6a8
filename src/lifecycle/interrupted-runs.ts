import { LOG_CONTEXT } from '../options/module.constants.js';
import { Injectable, Logger, Optional } from '@nestjs/common';
import { CallbackOutbox } from '../deliveries/callback-outbox.js';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import { CompletionBus } from '../completion/completion-bus.js';
import { InvocationRepository, type LostRun } from '../persistence/invocation.repository.js';
import type { InvocationRecord } from '../persistence/records.js';
import type { WebhookTransaction } from '../persistence/unit-of-work.js';
import { InvocationEvents } from '../events/invocation.events.js';
import { RunStop } from '../runs/run-stop.reasons.js';

/**
 * The one place that decides what happens to a run whose process was lost (crashed, killed, or hung
 * past its lease or its queue lock): the bot's choice. A `retryInterrupted` bot's run goes back to
 * `queued` to run again (the caller dispatches it); any other run is stored `failed` ("interrupted"),
 * waiters are woken and `failed` is emitted, so it never runs twice. The change is conditional on the
 * run still being lost, so two processes settling the same run agree, and a live owner's outcome wins.
 */
@Injectable()
export class InterruptedRuns {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly invocations: InvocationRepository,
    private readonly registry: WebhookBotRegistry,
    private readonly bus: CompletionBus,
    private readonly events: InvocationEvents,
    @Optional() private readonly outbox?: CallbackOutbox,
  ) {}

  /** `'requeued'` (dispatch it), `'failed'`, or null when the run was no longer lost (nothing changed). */
  async settle(run: InvocationRecord, lost: LostRun): Promise<'requeued' | 'failed' | null> {
    if (this.registry.get(run.botId)?.retryInterrupted) {
      if (!(await this.invocations.recoverInterrupted(run.id, lost, 'queued', {}))) return null;
      this.logger.warn(`Run ${run.id} of bot ${run.botId} was interrupted; running it again (retryInterrupted)`);
      return 'requeued';
    }
    // The outputs are left as they are: what the bot emitted before it was interrupted stays.
    const { error } = RunStop.interrupted();
    const finishedAt = new Date();
    const change = (tx?: WebhookTransaction) => this.invocations.recoverInterrupted(run.id, lost, 'failed', { finishedAt, error }, tx);
    const failed = this.outbox
      ? await this.outbox.finish(change, () => ({ ...run, status: 'failed', finishedAt, error }), {
          triggerId: run.triggerId,
          inUnit: false,
        })
      : await change();
    if (!failed) return null;
    this.logger.warn(`Run ${run.id} of bot ${run.botId} was interrupted; stored failed`);
    await this.bus.publish(run.id);
    this.events.emit(run, 'failed', run.startedAt ? finishedAt.getTime() - run.startedAt.getTime() : undefined);
    return 'failed';
  }
}
