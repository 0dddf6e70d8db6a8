import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import { BotRunner } from '../runner/bot-runner.js';

/** Ids only, so even a large backlog is one cheap query. */
const MAX_RECOVERED = 100_000;

/**
 * At startup, dispatches runs that were accepted (and charged) but never started, e.g. because the
 * process stopped with runs waiting for a slot. Safe with several processes on one database: the
 * executor's conditional `queued → running` change lets exactly one of them run each.
 */
@Injectable()
export class QueuedInvocationsDispatcher implements OnApplicationBootstrap {
  private readonly logger = new Logger('WebhookTriggerModule');

  constructor(
    private readonly invocations: InvocationRepository,
    private readonly runner: BotRunner,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const ids = await this.invocations.listIdsByStatus('queued', MAX_RECOVERED);
    if (ids.length === 0) return;
    this.logger.log(`Dispatching ${ids.length} run(s) left queued by an earlier process`);
    for (const id of ids) await this.runner.dispatch(id);
  }
}
