import { Inject, Injectable } from '@nestjs/common';
import { RunFinisher } from '../deliveries/run-finisher.js';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import type { BotInputs } from '../bots/bot.types.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { newInvocationId } from '../keys/ids.js';
import type { InvocationRepository } from '../persistence/invocation.repository.js';
import { WebhookStorage, type AcceptOutcome } from '../persistence/webhook-storage.js';
import { acceptedRecord, type InvocationRecord, type NewInvocation, type TriggerRecord } from '../persistence/records.js';
import type { WebhookTransaction } from '../persistence/unit-of-work.js';
import { BotRunner, dispatchedRun } from '../runs/bot-runner.js';
import { DispatchRetries } from '../runs/dispatch-retries.js';
import { RunBacklog } from '../runs/run-backlog.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import {
  BotNotRegisteredError,
  IdempotencyKeyReusedError,
  InvocationAlreadyFinishedError,
  NotEnoughCreditsError,
  ShuttingDownError,
} from '../errors/webhook-trigger.errors.js';
import { InvocationExecutor } from '../runs/invocation.executor.js';
import { RunStop } from '../runs/run-stop.reasons.js';
import { ShutdownState } from '../lifecycle/shutdown.state.js';
import { InvocationEvents } from '../events/invocation.events.js';
import { Clock } from '../time/clock.js';

export interface StartOptions {
  /** The caller's idempotency key. */
  idempotencyKey?: string;
  /** SHA-256 of the request body: a repeat under the same key must carry the same body. */
  requestHash?: string;
  /** The trigger request's trace context (telemetry/run-tracing.ts), stored with the run so the run joins the trace. */
  traceContext?: string | null;
}

export interface StartedInvocation {
  id: string;
  /** True when an earlier request with the same idempotency key already started it. */
  replayed: boolean;
  /** Credits this request charged (none for a repeat). */
  credits: number;
}

/**
 * Accepts runs (idempotency look-up, credit debit and the queued row commit together, then dispatch),
 * finds them for their trigger, and cancels them.
 */
@Injectable()
export class InvocationService {
  private readonly invocations: InvocationRepository;

  constructor(
    private readonly storage: WebhookStorage,
    private readonly registry: WebhookBotRegistry,
    private readonly runner: BotRunner,
    private readonly events: InvocationEvents,
    private readonly executor: InvocationExecutor,
    private readonly shutdown: ShutdownState,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    private readonly finisher: RunFinisher,
    private readonly clock: Clock,
    private readonly retries: DispatchRetries,
    private readonly backlog: RunBacklog,
  ) {
    this.invocations = storage.invocations;
  }

  /** The run, if it exists and was started through `trigger` (one trigger's key never opens another's runs). */
  async find(trigger: TriggerRecord, invocationId: string): Promise<InvocationRecord | null> {
    const invocation = await this.invocations.findById(invocationId);
    return invocation && invocation.triggerId === trigger.id ? invocation : null;
  }

  /**
   * Cancels a run: a queued one is stored `cancelled` and its credits refunded in one transaction; a
   * running one is stored `cancelled` (no refund: it has used resources) and its bot's signal fires.
   * Waiting sync requests return at once. Throws `InvocationAlreadyFinishedError` for finished runs;
   * null when the run does not exist for this trigger.
   */
  async cancel(trigger: TriggerRecord, invocationId: string): Promise<InvocationRecord | null> {
    const invocation = await this.find(trigger, invocationId);
    return invocation ? this.cancelRun(invocation) : null;
  }

  /** `cancel` for the admin, who may cancel any run, whatever its trigger; null when the run is unknown. */
  async cancelById(invocationId: string): Promise<InvocationRecord | null> {
    const invocation = await this.invocations.findById(invocationId);
    return invocation ? this.cancelRun(invocation) : null;
  }

  private async cancelRun(found: InvocationRecord): Promise<InvocationRecord> {
    const invocationId = found.id;
    let invocation = found;
    const { error } = RunStop.cancelled();
    if (invocation.status === 'queued') {
      const queued = invocation;
      const end = { status: 'cancelled' as const, finishedAt: new Date(this.clock.now()), error };
      const refunded = async (tx?: WebhookTransaction) => {
        const stored = await this.invocations.transition(queued.id, 'queued', 'cancelled', { finishedAt: end.finishedAt, error }, { tx });
        if (!stored) return false;
        if (queued.credits > 0) await this.storage.ledger.refund(queued.accountId, queued.credits, tx);
        return true;
      };
      if (await this.finisher.finish(queued, end, refunded, { inUnit: true })) return this.reread(queued);
      invocation = (await this.invocations.findById(invocationId))!; // it started meanwhile
    }
    if (invocation.status === 'running') {
      const running = invocation;
      const end = { status: 'cancelled' as const, finishedAt: new Date(this.clock.now()), error };
      const change = (tx?: WebhookTransaction) =>
        this.invocations.transition(running.id, 'running', 'cancelled', { finishedAt: end.finishedAt, error }, { tx });
      if (await this.finisher.finish(running, end, change)) {
        this.executor.abort(running.id, RunStop.cancelled());
        return this.reread(running);
      }
      invocation = (await this.invocations.findById(invocationId))!; // it finished meanwhile
    }
    throw new InvocationAlreadyFinishedError(invocation.id, invocation.status);
  }

  /** The run as stored after its cancel. */
  private async reread(invocation: InvocationRecord): Promise<InvocationRecord> {
    return (await this.invocations.findById(invocation.id)) ?? invocation;
  }

  async start(
    trigger: TriggerRecord,
    inputs: BotInputs,
    { idempotencyKey, requestHash, traceContext }: StartOptions = {},
  ): Promise<StartedInvocation> {
    if (this.shutdown.isShuttingDown) throw new ShuttingDownError();
    this.backlog.admit(trigger.accountId);
    const bot = this.registry.get(trigger.botId);
    if (!bot) throw new BotNotRegisteredError(trigger.botId);
    const now = new Date(this.clock.now());
    const since = new Date(now.getTime() - this.options.idempotencyTtlMs);
    // A free slot here and nobody waiting for one: the accept step stores the run `running` for this process
    // (the accept is its claim) and it starts right after the COMMIT, without a claim round trip.
    const reservation = this.invocations.storesClaims ? this.runner.reserve(trigger.accountId) : null;
    const claim = reservation
      ? { owner: reservation.owner, startedAt: now, leaseExpiresAt: new Date(now.getTime() + this.options.runLeaseMs) }
      : undefined;
    const record: NewInvocation = {
      id: newInvocationId(now.getTime()),
      triggerId: trigger.id,
      botId: trigger.botId,
      accountId: trigger.accountId,
      inputs,
      credits: bot.credits,
      idempotencyKey: idempotencyKey ?? null,
      requestHash: requestHash ?? null,
      createdAt: now,
      traceContext: traceContext ?? null,
      claim,
      runsWaiting: this.runner.behind(),
    };
    let outcome: AcceptOutcome;
    try {
      const accepted = this.storage.accept(record, since);
      outcome = await (claim ? this.executor.accepting(accepted) : accepted);
    } catch (error) {
      reservation?.release();
      throw error;
    }
    if (outcome.kind !== 'accepted') reservation?.release();
    if (outcome.kind === 'refused') throw new NotEnoughCreditsError(trigger.accountId, bot.credits, outcome.funded);
    if (outcome.kind === 'repeat') {
      if (outcome.earlier.requestHash !== (requestHash ?? null)) throw new IdempotencyKeyReusedError();
      return { id: outcome.earlier.id, replayed: true, credits: 0 };
    }
    this.events.emit(record, 'queued');
    if (reservation && claim) {
      reservation.start(acceptedRecord(record));
    } else {
      // Committed and charged: the caller gets its id even if the runner throws (it is dispatched again later).
      await this.retries.dispatchTo(this.runner, dispatchedRun(record));
    }
    return { id: record.id, replayed: false, credits: record.credits };
  }
}
