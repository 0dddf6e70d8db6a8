import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { ClusterBus } from '../cluster/cluster-bus.js';
import { TriggerChangeCache } from '../cluster/trigger-change-cache.js';
import { randomBytes } from 'node:crypto';
import type { BotOutput } from '../bots/bot.types.js';
import { generateMessageId } from '../callbacks/standard-webhooks.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import type { CallbackEvent, DeliveryRecord, InvocationError, InvocationStatus } from '../persistence/records.js';
import { CallbackStore } from '../persistence/callback-store.js';
import { WebhookUnitOfWork, type WebhookTransaction } from '../persistence/unit-of-work.js';
import { Clock } from '../time/clock.js';

/** `dlv_` + 16 random bytes. */
export const newDeliveryId = (): string => 'dlv_' + randomBytes(16).toString('base64url');
export const DELIVERY_ID_PATTERN = /^dlv_[A-Za-z0-9_-]{22}$/;

/** A run as a callback's body shows it. */
export interface CallbackInvocation {
  id: string;
  triggerId: string;
  /** The run's account (not in the body): the sender bounds each account's attempts in flight. */
  accountId: string;
  botId: string;
  status: InvocationStatus;
  outputs: BotOutput[] | null;
  error: InvocationError | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** The run's trace context, stored with each delivery so every attempt is sent in the run's trace. */
  traceContext?: string | null;
  /** An `invocation.output` body's `data.output`: the place of its one output among the run's outputs (0-based). */
  output?: { index: number };
}

/** What `onStored` calls with each delivery stored (or made due again) by this process. */
export type StoredListener = (deliveryId: string, triggerId: string, accountId: string | undefined) => void;

/**
 * The body of one delivery, fixed when it is stored: `{ type, timestamp, data: { invocation } }` (docs/callbacks.md);
 * an `invocation.output` body holds that output only (`outputs: [it]`) and `data.output: { index }`.
 */
export function callbackBody(event: CallbackEvent, run: CallbackInvocation, at: Date): string {
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return JSON.stringify({
    type: event,
    timestamp: at.toISOString(),
    data: {
      invocation: {
        id: run.id,
        triggerId: run.triggerId,
        botId: run.botId,
        status: run.status,
        outputs: run.outputs ?? [],
        error: run.error,
        createdAt: iso(run.createdAt),
        startedAt: iso(run.startedAt),
        finishedAt: iso(run.finishedAt),
      },
      ...(run.output ? { output: { index: run.output.index } } : {}),
    },
  });
}

/**
 * The outbox: stores a delivery BEFORE it is sent, in the transaction of the change it reports (an emitted output,
 * a run's terminal state; the storage's unit of work covers runs and deliveries alike), so a crash between the
 * two cannot lose it; then wakes this process's sender.
 * Only runs of a trigger with an enabled callback that chose the event get a delivery.
 */
@Injectable()
export class CallbackOutbox implements OnModuleDestroy {
  private readonly logger = new Logger(LOG_CONTEXT);
  /**
   * What each trigger's callback wants, kept per process like trigger look-ups (every run asks): dropped on
   * every node when a callback is saved, deleted or disabled (each announces its trigger changed).
   */
  private readonly wanted: TriggerChangeCache<ReadonlySet<CallbackEvent>>;
  private readonly listeners = new Set<StoredListener>();

  constructor(
    private readonly store: CallbackStore,
    private readonly unitOfWork: WebhookUnitOfWork,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    bus: ClusterBus,
    private readonly clock: Clock,
  ) {
    this.wanted = new TriggerChangeCache(bus, clock, options.triggerCacheTtlMs, async (triggerId): Promise<ReadonlySet<CallbackEvent>> => {
      const callback = await this.store.findCallback(triggerId);
      return new Set(callback?.enabled ? callback.events : []);
    });
  }

  onModuleDestroy(): void {
    this.wanted.close();
  }

  /** Calls `listener` with each delivery stored by this process (and its trigger, and account), once committed; returns the stop function. */
  onStored(listener: StoredListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Wakes this process's sender for a delivery of `triggerId`'s callback made due (stored, or redelivered). */
  wake(deliveryId: string, triggerId: string, accountId: string | undefined): void {
    for (const listener of this.listeners) {
      try {
        listener(deliveryId, triggerId, accountId);
      } catch (error) {
        this.logger.error(`A callback sender failed to take delivery ${deliveryId}: ${String(error)}`);
      }
    }
  }

  /** The events the trigger's callback sends now (empty when it has none, or it is disabled). */
  eventsOf(triggerId: string): Promise<ReadonlySet<CallbackEvent>> {
    return this.wanted.get(triggerId);
  }

  /**
   * A terminal state change and its `invocation.completed` delivery, committed together: when the trigger has a
   * callback, `change` runs in one unit of work with the delivery's insert, and the delivery is stored only when
   * `change` returned true (it made the change). Without a callback (one read), `change` runs as before: in a
   * unit of work when `inUnit` (it writes more than one row), else on its own. `run` gives the run as it now is.
   */
  async finish(
    change: (tx?: WebhookTransaction) => Promise<boolean>,
    run: () => CallbackInvocation,
    { triggerId, accountId, inUnit }: { triggerId: string; accountId: string; inUnit: boolean },
  ): Promise<boolean> {
    // A callback set between this read and the change misses this run's completion; one deleted meanwhile is
    // read again inside the transaction (insert), so no delivery is stored for it. `eventsOf` is this process's
    // copy, dropped on every node when a callback changes.
    const wanted = (await this.eventsOf(triggerId).catch(() => null))?.has('invocation.completed') ?? true;
    if (!wanted) return inUnit ? this.unitOfWork.run(change) : change();
    let stored: string | null = null;
    let started: string | null = null;
    const changed = await this.unitOfWork.run(async (tx) => {
      if (!(await change(tx))) return false;
      started = await this.missingStarted(run(), tx);
      stored = await this.insert('invocation.completed', run(), tx);
      return true;
    });
    if (started) this.wake(started, triggerId, accountId);
    if (stored) this.wake(stored, triggerId, accountId);
    return changed;
  }

  /**
   * An emitted output and its `invocation.output` delivery, committed together, for a trigger whose callback
   * wants the event (the caller read `eventsOf` first; others append alone and pay nothing). `run` turns the
   * change's result into the run to report, or null when the change did not happen (nothing is stored).
   */
  async along<T>(
    event: CallbackEvent,
    change: (tx?: WebhookTransaction) => Promise<T>,
    run: (result: T) => CallbackInvocation | null,
  ): Promise<T> {
    let stored = null as { id: string | null; run: CallbackInvocation } | null;
    const result = await this.unitOfWork.run(async (tx) => {
      const changed = await change(tx);
      const reported = run(changed);
      if (reported) stored = { id: await this.insert(event, reported, tx), run: reported };
      return changed;
    });
    if (stored?.id) this.wake(stored.id, stored.run.triggerId, stored.run.accountId);
    return result;
  }

  /**
   * The `invocation.started` delivery, stored right after the claim commits (a claim inside a transaction would
   * cost every run a unit of work). Were the process to die in between, `finish` stores it with the completion.
   */
  async record(event: CallbackEvent, run: CallbackInvocation): Promise<void> {
    const stored = await this.insert(event, run).catch((error: unknown) => this.lost(run.id, error));
    if (stored) this.wake(stored, run.triggerId, run.accountId);
  }

  private lost(invocationId: string, error: unknown): null {
    this.logger.error(`Run ${invocationId}: its callback delivery could not be stored (${String(error)})`);
    return null;
  }

  /**
   * A run that started but has no `invocation.started` delivery although its callback wants one (its process
   * died between the claim and storing it) gets it now, in the completion's transaction, before `completed`.
   */
  private async missingStarted(run: CallbackInvocation, tx: WebhookTransaction): Promise<string | null> {
    if (!run.startedAt) return null;
    const callback = await this.store.findCallback(run.triggerId, tx);
    if (!callback?.enabled || !callback.events.includes('invocation.started')) return null;
    if ((await this.store.listByInvocation(run.id, tx)).some((d) => d.event === 'invocation.started')) return null;
    return this.insert('invocation.started', { ...run, status: 'running', outputs: [], error: null, finishedAt: null }, tx);
  }

  private async insert(event: CallbackEvent, run: CallbackInvocation, tx?: WebhookTransaction): Promise<string | null> {
    const callback = await this.store.findCallback(run.triggerId, tx);
    if (!callback || !callback.enabled || !callback.events.includes(event)) return null;
    const now = new Date(this.clock.now());
    const delivery: DeliveryRecord = {
      id: newDeliveryId(),
      triggerId: run.triggerId,
      invocationId: run.id,
      event,
      msgId: generateMessageId(),
      body: callbackBody(event, run, now),
      status: 'pending',
      attempts: 0,
      nextAttemptAt: new Date(now.getTime() + (this.options.callbackRetryScheduleMs[0] ?? 0)),
      lastAttemptAt: null,
      responseStatus: null,
      latencyMs: null,
      lastError: null,
      createdAt: now,
      traceContext: run.traceContext ?? null,
    };
    await this.store.insertDelivery(delivery, tx);
    return delivery.id;
  }
}
