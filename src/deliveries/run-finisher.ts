import { Injectable } from '@nestjs/common';
import { ClusterBus } from '../cluster/cluster-bus.js';
import { InvocationEvents } from '../events/invocation.events.js';
import type { InvocationError, InvocationRecord, InvocationStatus } from '../persistence/records.js';
import type { WebhookTransaction } from '../persistence/unit-of-work.js';
import { CallbackOutbox } from './callback-outbox.js';

/** How a run ended, as its final change stores it. */
export interface RunEnd {
  status: InvocationStatus;
  finishedAt: Date;
  /** Undefined: the outputs stored so far stay (cancel, interruption). */
  outputs?: InvocationRecord['outputs'];
  error: InvocationError | null;
}

/**
 * The one owner of a run's final change and what follows it, whoever ends the run (the executor with the bot's
 * outcome, a cancel, the interrupted-run policy): the change and its `invocation.completed` delivery commit
 * together (the outbox), then the cluster hears the run finished (waiting sync requests, streams, the node
 * running its bot) and the host's `invocation.*` event is emitted. Nothing follows a change that did not happen.
 */
@Injectable()
export class RunFinisher {
  constructor(
    private readonly outbox: CallbackOutbox,
    private readonly bus: ClusterBus,
    private readonly events: InvocationEvents,
  ) {}

  /**
   * `change` is conditional (it returns false when the run was no longer where it expected, e.g. finished
   * elsewhere meanwhile); `inUnit` when it writes more than one row (a refund) and needs a unit of work even
   * without a callback. Returns whether the change was made.
   */
  async finish(
    run: InvocationRecord,
    end: RunEnd,
    change: (tx?: WebhookTransaction) => Promise<boolean>,
    { inUnit = false }: { inUnit?: boolean } = {},
  ): Promise<boolean> {
    const finished = () => ({ ...run, ...end, outputs: end.outputs === undefined ? run.outputs : end.outputs });
    if (!(await this.outbox.finish(change, finished, { triggerId: run.triggerId, accountId: run.accountId, inUnit }))) return false;
    await this.bus.publish(run.id);
    this.events.emit(run, end.status, run.startedAt ? end.finishedAt.getTime() - run.startedAt.getTime() : undefined);
    return true;
  }
}
