import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { BotOutput } from '../bots/bot.types.js';
import { WebhookBotRegistry, type RegisteredBot } from '../bots/webhook-bot.registry.js';
import { ClusterBus } from '../cluster/cluster-bus.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import type { WebhookTransaction } from '../persistence/unit-of-work.js';
import {
  CALLBACK_EVENTS,
  type CallbackEvent,
  type InvocationError,
  type InvocationRecord,
  type InvocationStatus,
} from '../persistence/records.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import { BOT_NOT_REGISTERED, INVALID_OUTPUTS, OUTPUTS_TOO_LARGE } from '../errors/webhook-trigger.messages.js';
import { InvocationEvents } from '../events/invocation.events.js';
import { RunStop } from './run-stop.reasons.js';
import { untilAborted } from './until-aborted.js';
import { CallbackOutbox, type CallbackInvocation } from '../deliveries/callback-outbox.js';
import { RunFinisher } from '../deliveries/run-finisher.js';
import { cleanOutputs, isValidOutputs, RunOutputs } from './run-outputs.js';
import { Clock, type ClockTimer } from '../time/clock.js';
import { boundedErrorMessage, RunClaimError } from './run-error.js';
import { startRunSpan, type RunSpan } from '../telemetry/run-tracing.js';

interface Outcome {
  status: InvocationStatus;
  outputs: BotOutput[];
  error: InvocationError | null;
}

interface ActiveRun {
  controller: AbortController;
  /** The bot is done and its outcome is being stored. */
  finishing: boolean;
  /** Made only when someone waits for the run (`settled`, `idle`, `drain`); most runs end unwatched. */
  done?: Promise<void>;
  finished?: () => void;
}

/** Resolves once `run` is no longer in flight (its `finished` is called as it leaves `active`). */
function whenDone(run: ActiveRun): Promise<void> {
  return (run.done ??= new Promise<void>((resolve) => (run.finished = resolve)));
}

const NO_EVENTS: ReadonlySet<CallbackEvent> = new Set();
/** When the callback cannot be read, its events are tried (each delivery reads it again before it is stored). */
const ALL_EVENTS: ReadonlySet<CallbackEvent> = new Set(CALLBACK_EVENTS);

/**
 * Runs one invocation: claim it (`queued → running`, with this process as owner and a lease) → `main()`
 * under the bot's time limit → store the outcome (conditional on still owning it) → wake waiters →
 * emit events. Knows every run in flight in this process, for cancel, lease renewal and shutdown.
 */
@Injectable()
export class InvocationExecutor {
  private readonly logger = new Logger(LOG_CONTEXT);
  private readonly active = new Map<string, ActiveRun>();
  private readonly claims = new Set<Promise<unknown>>();
  /** Identifies this process as the owner of the runs it claims. */
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private drainStarted = false;

  constructor(
    private readonly invocations: InvocationRepository,
    private readonly registry: WebhookBotRegistry,
    bus: ClusterBus,
    private readonly events: InvocationEvents,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    private readonly outbox: CallbackOutbox,
    private readonly finisher: RunFinisher,
    private readonly clock: Clock,
  ) {
    bus.onAnyFinished((invocationId) => {
      const run = this.active.get(invocationId);
      // Our own runs' finishes are heard here too (the run is storing its outcome): not news.
      if (run && !run.finishing && !run.controller.signal.aborted) void this.finishedElsewhere(invocationId);
    });
  }

  /** Runs in flight here: their bot executing, or their outcome being stored (a metrics gauge). */
  get runningCount(): number {
    return this.active.size;
  }

  /** True once `drain()` began (shutdown): nothing new is claimed here from then on. */
  get draining(): boolean {
    return this.drainStarted;
  }

  /**
   * Claims and runs one invocation, and stores its outcome. `botDone` is called once the bot's `main()` is
   * over (returned, threw, or was ended by its signal), before the outcome is stored: what lets a runner
   * free the run's slot without waiting for that write. It is not called when the run was not claimed. A claim
   * that met an error rejects with `RunClaimError` (the run may still be queued); later errors as they are.
   */
  async execute(invocationId: string, botDone: () => void = () => undefined): Promise<void> {
    if (this.drainStarted) return; // stays queued for another process or the next start
    const startedAt = new Date(this.clock.now());
    // The conditional claim makes a second dispatch of the same id a no-op. Shutdown waits for claims in
    // flight too, so none of them meets a closed database.
    const claim = this.invocations.markRunning(invocationId, startedAt, this.owner, this.leaseFrom(startedAt));
    this.claims.add(claim);
    let invocation: InvocationRecord | null;
    try {
      invocation = await claim;
    } catch (error) {
      throw new RunClaimError(invocationId, error);
    } finally {
      this.claims.delete(claim);
    }
    if (!invocation) return;
    return this.run(invocation, startedAt, botDone);
  }

  /**
   * An accept step that stores its run `running` for this process (accept-as-running): shutdown waits for
   * it like for a claim, so the run it commits is started here (`runAccepted`) before the drain looks at
   * the runs in flight, never left `running` with nobody to run it.
   */
  accepting<T>(accept: Promise<T>): Promise<T> {
    this.claims.add(accept);
    const settled = () => void this.claims.delete(accept);
    accept.then(settled, settled);
    return accept;
  }

  /**
   * Runs an invocation its accept step stored `running` for this process (accept-as-running: the accept was
   * the claim). Registered as in flight before anything is awaited, so a shutdown that begins meanwhile
   * waits for it.
   */
  runAccepted(invocation: InvocationRecord, botDone: () => void = () => undefined): Promise<void> {
    return this.run(invocation, invocation.startedAt ?? new Date(this.clock.now()), botDone);
  }

  private async run(invocation: InvocationRecord, startedAt: Date, botDone: () => void): Promise<void> {
    const invocationId = invocation.id;
    const claimed = invocation;
    const controller = new AbortController();
    const run: ActiveRun = { controller, finishing: false };
    this.active.set(invocationId, run);
    this.events.emit(invocation, 'running');
    // What the trigger's callback wants (this process's copy, `CallbackOutbox.eventsOf`), for its started and
    // output events; the completion asks again. Read before the try below: the emit() closure needs it.
    let callbackEvents: ReadonlySet<CallbackEvent> = NO_EVENTS;
    // Made on the first ctx.emit() only; a retried run starts from what its earlier attempt emitted.
    let emitted: RunOutputs | undefined;
    const emit = (output: BotOutput): Promise<boolean> => {
      if (!emitted) {
        emitted = this.runOutputs(claimed, controller, callbackEvents.has('invocation.output'));
      }
      return emitted.emit(output);
    };
    const before = () => emitted?.list ?? claimed.outputs ?? [];
    const span = startRunSpan(claimed);
    let ended: Outcome | undefined;
    try {
      // `invocation.started` is stored right after the claim: were this process to die in between, the run's
      // completion (by recovery) stores the missing started delivery with it (CallbackOutbox.finish).
      callbackEvents = await this.outbox.eventsOf(claimed.triggerId).catch(() => ALL_EVENTS);
      if (callbackEvents.has('invocation.started')) await this.outbox.record('invocation.started', claimed);
      const bot = this.registry.get(invocation.botId);
      const outcome = bot
        ? await this.runBot(bot, invocation, controller, emit, before, span)
        : { status: 'failed' as const, outputs: [], error: { message: BOT_NOT_REGISTERED(invocation.botId), code: 'bot_not_registered' } };
      botDone();
      run.finishing = true; // our own publish in store() is not news to us
      if (emitted) await emitted.end();
      // The run's outputs: the emitted ones (kept whatever the outcome), then the returned ones.
      const earlier = before();
      if (earlier.length > 0) outcome.outputs = [...earlier, ...outcome.outputs];
      await this.store(invocation, startedAt, (ended = outcome));
    } finally {
      span.end(ended?.status ?? 'failed', ended ? ended.error : RunStop.interrupted().error);
      this.active.delete(invocationId);
      run.finished?.();
    }
  }

  private runOutputs(invocation: InvocationRecord, controller: AbortController, callback: boolean): RunOutputs {
    return new RunOutputs(
      invocation.outputs ?? [],
      this.options.maxOutputBytes,
      controller.signal,
      async (output, index) => {
        const append = (tx?: WebhookTransaction) => this.invocations.appendOutput(invocation.id, this.owner, output, tx);
        // The body of its `invocation.output` callback: this output alone and its place, never the list so far
        // (a run of N outputs would store and send N²).
        const thisOne = (): CallbackInvocation => ({ ...invocation, outputs: [output], output: { index } });
        const stored = callback ? await this.outbox.along('invocation.output', append, (ok) => (ok ? thisOne() : null)) : await append();
        if (stored) this.events.output(invocation);
        return stored;
      },
      (error) => controller.abort(RunStop.badOutput(error)),
      (error) => this.logger.warn(`Run ${invocation.id}: an emitted output could not be stored (${String(error)})`),
    );
  }

  /** The outcome's `outputs` are the returned ones only; `before()` gives what was emitted (or stored earlier). */
  private async runBot(
    bot: RegisteredBot,
    invocation: InvocationRecord,
    controller: AbortController,
    emit: (output: BotOutput) => Promise<boolean>,
    before: () => BotOutput[],
    span: RunSpan,
  ): Promise<Outcome> {
    // Cancelled (or finished elsewhere) before the bot was called: it is not called at all.
    if (controller.signal.aborted) return this.stopped(controller.signal.reason);
    const timer = this.clock.setTimer(() => controller.abort(RunStop.timeout(bot.timeoutMs)), bot.timeoutMs);
    try {
      const result = await untilAborted(controller.signal, () =>
        // In the run's span: a bot's own spans (from the global tracer) nest under it.
        span.within(() =>
          bot.instance.main(invocation.inputs, {
            invocationId: invocation.id,
            triggerId: invocation.triggerId,
            botId: invocation.botId,
            accountId: invocation.accountId,
            signal: controller.signal,
            logger: new Logger(`WebhookBot:${bot.id}:${invocation.id}`),
            emit,
          }),
        ),
      );
      if (controller.signal.aborted) return this.stopped(controller.signal.reason);
      if (!isValidOutputs(result)) return { status: 'failed', outputs: [], error: { message: INVALID_OUTPUTS, code: 'invalid_outputs' } };
      const outputs = cleanOutputs(result);
      // Outputs are stored, listed and sent to every waiter: their size is bounded like a request body's.
      const earlier = before();
      const bytes =
        earlier.length === 0 ? Buffer.byteLength(JSON.stringify(outputs)) : Buffer.byteLength(JSON.stringify([...earlier, ...outputs]));
      if (bytes > this.options.maxOutputBytes) {
        return {
          status: 'failed',
          outputs: [],
          error: { message: OUTPUTS_TOO_LARGE(bytes, this.options.maxOutputBytes), code: 'outputs_too_large' },
        };
      }
      return { status: 'succeeded', outputs, error: null };
    } catch (thrown: unknown) {
      // A bot that rejects because its signal fired ends the way the signal says, not as its own failure.
      if (controller.signal.aborted) return this.stopped(controller.signal.reason);
      return { status: 'failed', outputs: [], error: { message: boundedErrorMessage(thrown) } };
    } finally {
      timer.clear();
    }
  }

  private stopped(reason: unknown): Outcome {
    const stop = reason instanceof RunStop ? reason : RunStop.interrupted();
    return { status: stop.status, outputs: [], error: stop.error };
  }

  private async store(invocation: InvocationRecord, startedAt: Date, outcome: Outcome): Promise<void> {
    // Cancel already stored its own terminal state; nothing to write.
    if (outcome.status === 'cancelled') return;
    const fields = { finishedAt: new Date(this.clock.now()), outputs: outcome.outputs, error: outcome.error };
    const stored = await this.finisher.finish({ ...invocation, startedAt }, { status: outcome.status, ...fields }, (tx) =>
      this.invocations.transition(invocation.id, 'running', outcome.status, fields, { owner: this.owner, tx }),
    );
    if (!stored) this.logger.debug(`Run ${invocation.id} was finished elsewhere (cancelled or recovered); this outcome was dropped`);
  }

  /**
   * A run in flight here was finished by someone else (cancel on any node, or recovery): fire its signal.
   * With the Redis bus this is how a cancel on an API node reaches the worker running the bot.
   */
  private async finishedElsewhere(invocationId: string): Promise<void> {
    const run = this.active.get(invocationId);
    if (!run || run.finishing || run.controller.signal.aborted) return;
    const row = await this.invocations.findById(invocationId).catch(() => null);
    if (!row || row.status === 'running' || row.status === 'queued') return;
    run.controller.abort(row.status === 'cancelled' ? RunStop.cancelled() : RunStop.interrupted());
  }

  /**
   * Resolves once the run is no longer in flight in this process: its bot is over and its outcome stored, or
   * dropped because the run was finished elsewhere (at once when it is not running here). What a test awaits
   * before it asserts that a late outcome changed nothing.
   */
  settled(invocationId: string): Promise<void> {
    const run = this.active.get(invocationId);
    return run ? whenDone(run) : Promise.resolve();
  }

  /**
   * Resolves once nothing is in flight in this process: no claim pending, no bot running, no outcome being
   * stored (runs started meanwhile are waited for too). A bot that never ends keeps it pending.
   */
  async idle(): Promise<void> {
    for (;;) {
      await Promise.allSettled([...this.claims]);
      await Promise.all([...this.active.values()].map(whenDone));
      // A freed slot starts the next queued run on a later turn: look again once it had its chance.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.claims.size === 0 && this.active.size === 0) return;
    }
  }

  /** Fires the signal of a run in flight here (after cancel stored `cancelled`); false if not here. */
  abort(invocationId: string, reason: RunStop): boolean {
    const run = this.active.get(invocationId);
    if (!run) return false;
    run.controller.abort(reason);
    return true;
  }

  /**
   * Extends the leases of the runs in flight here; called by the recovery loop well before they expire. Only
   * theirs: a run whose outcome could not be stored left `active` but is still `running` under this owner, and
   * renewing it with the others would keep it from recovery for as long as this process is busy.
   */
  async renewLeases(): Promise<void> {
    if (this.active.size > 0)
      await this.invocations.renewLeases(this.owner, [...this.active.keys()], this.leaseFrom(new Date(this.clock.now())));
  }

  /**
   * Lets the runs in flight finish for up to `graceMs`, then aborts the rest; they end `failed`
   * ("interrupted"), so nothing is left `running`.
   */
  async drain(graceMs: number): Promise<void> {
    this.drainStarted = true;
    const all = () => Promise.all([...this.active.values()].map(whenDone));
    await Promise.allSettled([...this.claims]);
    if (this.active.size === 0) return;
    // The recovery loop stopped when shutdown began; these runs are still ours, so keep their leases
    // fresh through the grace (longer than a lease, another process sharing the database would take them).
    const renewal = this.clock.setRepeating(
      () => void this.renewLeases().catch((e: unknown) => this.logger.warn(`Lease renewal during shutdown failed: ${String(e)}`)),
      Math.max(50, Math.floor(this.options.runLeaseMs / 3)),
    );
    let timer: ClockTimer | undefined;
    try {
      // No grace: abort at once (a clock that moves only when told, as in the testing kit, would never fire a 0 ms timer).
      if (graceMs > 0) {
        const graceOver = new Promise<'grace-over'>((resolve) => (timer = this.clock.setTimer(() => resolve('grace-over'), graceMs)));
        const first = await Promise.race([all().then(() => 'done' as const), graceOver]);
        if (first === 'done') return;
      }
      for (const run of this.active.values()) run.controller.abort(RunStop.interrupted());
      await all();
    } finally {
      timer?.clear();
      renewal.clear();
    }
  }

  private leaseFrom(now: Date): Date {
    return new Date(now.getTime() + this.options.runLeaseMs);
  }
}
