import { Inject, Injectable } from '@nestjs/common';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import type { BotInputs } from '../bots/bot.types.js';
import type { ResolvedWebhookTriggerOptions } from '../interfaces/webhook-trigger-options.interface.js';
import { newInvocationId } from '../keys/ids.js';
import { CreditLedger } from '../persistence/credit-ledger.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import { IdempotencyKeyTakenError, type TriggerRecord } from '../persistence/records.js';
import { WebhookUnitOfWork } from '../persistence/unit-of-work.js';
import { BotRunner } from '../runner/bot-runner.js';
import { RESOLVED_OPTIONS } from '../webhook-trigger.constants.js';
import { BotNotRegisteredError, IdempotencyKeyReusedError, NotEnoughCreditsError } from './invocation.errors.js';
import { InvocationEvents } from './invocation.events.js';

export interface StartOptions {
  /** The caller's idempotency key. */
  idempotencyKey?: string;
  /** SHA-256 of the request body: a repeat under the same key must carry the same body. */
  requestHash?: string;
}

export interface StartedInvocation {
  id: string;
  /** True when an earlier request with the same idempotency key already started it. */
  replayed: boolean;
}

/** Accepts a run: idempotency look-up, credit debit and the queued row commit together, then dispatch. */
@Injectable()
export class InvocationService {
  constructor(
    private readonly unitOfWork: WebhookUnitOfWork,
    private readonly invocations: InvocationRepository,
    private readonly ledger: CreditLedger,
    private readonly registry: WebhookBotRegistry,
    private readonly runner: BotRunner,
    private readonly events: InvocationEvents,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  async start(trigger: TriggerRecord, inputs: BotInputs, { idempotencyKey, requestHash }: StartOptions = {}): Promise<StartedInvocation> {
    const bot = this.registry.get(trigger.botId);
    if (!bot) throw new BotNotRegisteredError(trigger.botId);
    const now = new Date();
    const since = new Date(now.getTime() - this.options.idempotencyTtlMs);
    const record = {
      id: newInvocationId(),
      triggerId: trigger.id,
      botId: trigger.botId,
      accountId: trigger.accountId,
      inputs,
      credits: bot.credits,
      idempotencyKey: idempotencyKey ?? null,
      requestHash: requestHash ?? null,
      createdAt: now,
    };
    const replay = (earlier: { id: string; requestHash: string | null }): StartedInvocation => {
      if (earlier.requestHash !== (requestHash ?? null)) throw new IdempotencyKeyReusedError();
      return { id: earlier.id, replayed: true };
    };

    let started: StartedInvocation;
    try {
      started = await this.unitOfWork.run(async (tx) => {
        if (idempotencyKey !== undefined) {
          const earlier = await this.invocations.findByIdempotencyKey(trigger.id, idempotencyKey, since, tx);
          if (earlier) return replay(earlier);
          await this.invocations.releaseIdempotencyKey(trigger.id, idempotencyKey, since, tx);
        }
        if (bot.credits > 0 && !(await this.ledger.tryDebit(trigger.accountId, bot.credits, tx))) {
          throw new NotEnoughCreditsError(trigger.accountId, bot.credits);
        }
        await this.invocations.insert(record, tx);
        return { id: record.id, replayed: false };
      });
    } catch (error) {
      // A concurrent request with the same key committed first; its transaction, and so its charge, won.
      if (!(error instanceof IdempotencyKeyTakenError) || idempotencyKey === undefined) throw error;
      const earlier = await this.invocations.findByIdempotencyKey(trigger.id, idempotencyKey, since);
      if (!earlier) throw error;
      return replay(earlier);
    }

    if (!started.replayed) {
      this.events.emit(record, 'queued');
      await this.runner.dispatch(record.id);
    }
    return started;
  }
}
