import { KeyedCounts } from '../rate-limits/held-shares.js';
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { ClusterBus } from '../cluster/cluster-bus.js';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { CallbackTransport } from '../callbacks/callback-transport.js';
import { nextAttemptDelay } from '../callbacks/retry-schedule.js';
import { webhookHeaders } from '../callbacks/standard-webhooks.js';
import { CallbackOutbox } from '../deliveries/callback-outbox.js';
import { SecretsAtRest } from '../keys/secrets-at-rest.js';
import { InvocationEvents } from '../events/invocation.events.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import type { DeliveryRecord } from '../persistence/records.js';
import { CallbackStore, type DueDelivery } from '../persistence/callback-store.js';
import { ShutdownState } from './shutdown.state.js';
import { Clock, type ClockTimer } from '../time/clock.js';
import { WebhookMetrics } from '../telemetry/webhook-metrics.js';
import { traceDelivery } from '../telemetry/run-tracing.js';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';

/** How often due deliveries are looked for (those stored by other processes, retries, a dead sender's). */
export const CALLBACK_SWEEP_MS = 5_000;
/** Attempts in flight at once in this process; more wait for the next sweep. */
const MAX_IN_FLIGHT = 32;
/**
 * Attempts in flight at once in this process for one trigger's callback: a receiver that hangs up to
 * `callbackTimeoutMs` with a backlog due holds these, never the places of other triggers' callbacks.
 */
export const MAX_IN_FLIGHT_PER_TRIGGER = 4;
/**
 * Attempts in flight at once in this process for the callbacks of one account's triggers, when the bots belong
 * to more than one account: an account whose receivers hang, however many triggers it has, holds at most a
 * quarter of the places. (An app of one account keeps all of them for it: nobody else to keep room for.)
 */
export const MAX_IN_FLIGHT_PER_ACCOUNT = 8;
/** How often at most a sweep an attempt's end asked for lists a page past the triggers at their cap (it scans their backlog). */
const SKIP_PAGE_EVERY_MS = 1_000;
/** Deliveries taken per sweep. */
const SWEEP_BATCH = 200;

/**
 * Sends the outbox's deliveries, in the processes that run bots (`role` all or worker). A delivery stored in this
 * process is sent at once (the outbox wakes this sender); a failed attempt sets a timer for its next one, by the
 * retry schedule (`callbackRetryScheduleMs`, ±20% jitter, `Retry-After` honoured); and a sweep at startup and every
 * `CALLBACK_SWEEP_MS` takes every due delivery nobody holds: those stored by API nodes, redelivered elsewhere, or
 * held by a sender that died (its lease ran out). Each attempt is claimed first (owner + a lease longer than the
 * timeout), so two processes never send the same attempt at once; delivery is at least once. One trigger's callback
 * has at most `MAX_IN_FLIGHT_PER_TRIGGER` attempts in flight here, and one account's callbacks
 * `MAX_IN_FLIGHT_PER_ACCOUNT`: their other due deliveries wait (oldest due first) while the others' go, so a slow
 * receiver with a backlog, or an account of many, cannot delay every other tenant's callbacks.
 */
@Injectable()
export class CallbackDeliveries implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(LOG_CONTEXT);
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Attempts in flight per trigger, and per account (only those with one or more). */
  private readonly triggerInFlight = new KeyedCounts();
  private readonly accountInFlight = new KeyedCounts();
  private readonly timers = new Map<string, ClockTimer>();
  private started = false;
  private sweeping: Promise<void> | null = null;
  /** A sweep was asked for while one was in progress (and whether one that lists past the triggers at their cap). */
  private sweepAgain = false;
  private againPastCapped = false;
  /** When a page that skips the triggers at their cap was last listed (clock ms). */
  private skippedAt = -Infinity;
  /** More may be due than this process took: the last sweep's batch was full, or a delivery was turned away. */
  private backlog = false;

  constructor(
    private readonly store: CallbackStore,
    private readonly outbox: CallbackOutbox,
    private readonly secrets: SecretsAtRest,
    private readonly events: InvocationEvents,
    private readonly shutdown: ShutdownState,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    private readonly bus: ClusterBus,
    private readonly clock: Clock,
    private readonly transport: CallbackTransport,
    private readonly metrics: WebhookMetrics,
    private readonly registry: WebhookBotRegistry,
  ) {}

  /** Attempts in flight in this process now. */
  get attemptsInFlight(): number {
    return this.inFlight.size;
  }

  async onApplicationBootstrap(): Promise<void> {
    // API nodes store deliveries (cancel, redeliver) but leave sending to the processes that run bots.
    if (this.options.role === 'api') return;
    this.started = true;
    // A first attempt delayed by the schedule gets its timer; the usual 0 is sent at once.
    const first = this.options.callbackRetryScheduleMs[0] ?? 0;
    this.outbox.onStored((id, triggerId, accountId) =>
      first > 0 ? this.later({ id, triggerId, accountId }, first) : this.deliver({ id, triggerId, accountId }),
    );
    await this.sweep();
    this.shutdown.every(CALLBACK_SWEEP_MS, () => this.sweep());
  }

  async onModuleDestroy(): Promise<void> {
    this.started = false;
    for (const timer of this.timers.values()) timer.clear();
    this.timers.clear();
    // Attempts in flight may finish (each is bounded by its timeout) within the shutdown grace, before the database
    // closes; one cut off holds its delivery until the lease runs out, then another sender (or the next start) sends it.
    const inFlight = Promise.allSettled([...this.inFlight.values(), ...(this.sweeping ? [this.sweeping] : [])]);
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.options.shutdownGraceMs)));
    await Promise.race([inFlight, grace]);
    clearTimeout(timer);
  }

  /**
   * Takes every due delivery nobody holds; one sweep at a time (one asked for meanwhile runs once it ends).
   * `pastCapped`: list a page past the triggers at their cap whenever the first page was theirs (the periodic and
   * startup sweeps); a sweep that an attempt's end asks for does so once a second at most, since skipping a
   * backlog scans it (the index orders by due time only).
   */
  sweep(pastCapped = true): Promise<void> {
    if (!this.started || this.shutdown.isShuttingDown) return Promise.resolve();
    if (this.sweeping) {
      // The sweep in progress listed before places were freed since: look again once it is done.
      this.sweepAgain = true;
      this.againPastCapped ||= pastCapped;
      return this.sweeping;
    }
    this.sweeping = this.sweepWhileAsked(pastCapped).finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  private async sweepWhileAsked(pastCapped: boolean): Promise<void> {
    for (let past = pastCapped; ;) {
      this.sweepAgain = false;
      this.againPastCapped = false;
      await this.sweepOnce(past).catch((error: unknown) =>
        this.logger.error(`Looking for due callback deliveries failed: ${String(error)}`),
      );
      if (!this.sweepAgain || this.shutdown.isShuttingDown) return;
      past = this.againPastCapped;
    }
  }

  private async sweepOnce(pastCapped: boolean): Promise<void> {
    // At most one page per place (a bound for safety: each page after the first leaves out one more trigger).
    for (let page = 0; page < MAX_IN_FLIGHT; page++) {
      const room = Math.min(MAX_IN_FLIGHT - this.inFlight.size, SWEEP_BATCH);
      if (room <= 0) return;
      // Triggers at their cap are left out of the listing, so their backlog cannot fill the page (deliveries
      // stored here are taken at once by their wake-up, whatever the sweep does).
      const now = this.clock.now();
      if (page > 0 && !pastCapped && now - this.skippedAt < SKIP_PAGE_EVERY_MS) return;
      const atCap = this.triggerInFlight.keysAtLeast(MAX_IN_FLIGHT_PER_TRIGGER);
      const accountsAtCap = this.accountInFlight.keysAtLeast(MAX_IN_FLIGHT_PER_ACCOUNT);
      if (page > 0) this.skippedAt = now;
      const due = await this.store.listDue(new Date(now), room, atCap, accountsAtCap);
      // A full page means more may be due (a backlog after an outage): each attempt that ends sweeps again, so the
      // backlog drains at MAX_IN_FLIGHT attempts at a time rather than one page per sweep interval. (A trigger at
      // its cap sweeps when one of its attempts ends: see deliver.)
      const full = due.length === room;
      this.backlog = page === 0 ? full : this.backlog || full;
      let capped = false;
      for (const delivery of due) if (!this.deliver(delivery) && this.atCap(delivery)) capped = true;
      // A full page whose trigger (or account) reached its cap while it was taken may have hidden other triggers'
      // deliveries: list again without it. (A store that answered what it was told to skip would answer it again: stop.)
      const ignoredSkip = due.some(
        (d) => atCap.includes(d.triggerId) || (d.accountId !== undefined && accountsAtCap.includes(d.accountId)),
      );
      if (!full || !capped || ignoredSkip) return;
    }
  }

  /** Whether the delivery's trigger, or its account, has all its places in flight. */
  private atCap(delivery: DueDelivery): boolean {
    const accountId = this.cappedAccount(delivery);
    return (
      this.triggerInFlight.of(delivery.triggerId) >= MAX_IN_FLIGHT_PER_TRIGGER ||
      (accountId !== undefined && this.accountInFlight.of(accountId) >= MAX_IN_FLIGHT_PER_ACCOUNT)
    );
  }

  /** The account whose places the delivery counts in: none when every bot is of one account (or the store gave none). */
  private cappedAccount(delivery: DueDelivery): string | undefined {
    return this.registry.manyAccounts ? delivery.accountId : undefined;
  }

  /**
   * One attempt of a delivery of its trigger's callback, if it is due and nobody else holds it; never throws.
   * False when it was not started here (held already, or no place free: the process's, its trigger's or its account's).
   */
  deliver(delivery: DueDelivery): boolean {
    const { id, triggerId } = delivery;
    const accountId = this.cappedAccount(delivery);
    if (!this.started || this.shutdown.isShuttingDown || this.inFlight.has(id)) return false;
    if (this.inFlight.size >= MAX_IN_FLIGHT || this.atCap(delivery)) {
      this.backlog = true; // taken by the sweep that the next attempt to end starts
      return false;
    }
    const timer = this.timers.get(id);
    if (timer) {
      timer.clear();
      this.timers.delete(id);
    }
    const attempt = this.attempt(delivery)
      .catch((error: unknown) => {
        // Cut off by the app's own shutdown (the database closed under it): the lease hands it over later.
        if (!this.shutdown.isShuttingDown) this.logger.error(`Callback delivery ${id} failed unexpectedly: ${String(error)}`);
      })
      .finally(() => {
        // A trigger (or account) at its cap was left out of the listings: it may have more due, taken now that it has a place.
        const wasAtCap = this.atCap(delivery);
        this.inFlight.delete(id);
        this.triggerInFlight.add(triggerId, -1);
        if (accountId !== undefined) this.accountInFlight.add(accountId, -1);
        if (this.backlog || wasAtCap) void this.sweep(false);
      });
    this.inFlight.set(id, attempt);
    this.triggerInFlight.add(triggerId, 1);
    if (accountId !== undefined) this.accountInFlight.add(accountId, 1);
    return true;
  }

  private async attempt(due: DueDelivery): Promise<void> {
    const { id } = due;
    const now = new Date(this.clock.now());
    // The lease outlasts the attempt's own timeout (which bounds DNS, connect and the answer) with room for the
    // two writes around it, so a live sender never loses a claim it is using.
    const timeoutMs = this.options.callbackTimeoutMs;
    const leaseMs = timeoutMs + Math.min(10_000, Math.max(1_000, timeoutMs));
    const delivery = await this.store.claim(id, this.owner, now, new Date(now.getTime() + leaseMs));
    if (!delivery) return;
    const callback = await this.store.findCallback(delivery.triggerId);
    if (!callback || !callback.enabled) {
      this.metrics.callbackAttempted(delivery.event, 'abandoned');
      await this.store.abandon(
        id,
        this.owner,
        callback ? `The callback is disabled (${callback.disabledReason ?? 'by the admin'})` : 'The trigger has no callback any more',
      );
      return;
    }
    const secret = this.secrets.open(callback.secret);
    if (!secret) {
      this.metrics.callbackAttempted(delivery.event, 'abandoned');
      await this.store.abandon(id, this.owner, 'The callback secret cannot be read: keySecret changed since it was set; rotate it');
      return;
    }
    const attemptedAt = new Date(this.clock.now());
    const headers: Record<string, string> = {
      ...webhookHeaders(secret, delivery.msgId, Math.floor(attemptedAt.getTime() / 1000), delivery.body),
    };
    // In a client span of the run's trace, whose `traceparent` the receiver gets (added to `headers`).
    const result = await traceDelivery(delivery, headers, () =>
      this.transport.send({
        url: callback.url,
        headers,
        body: delivery.body,
        timeoutMs: this.options.callbackTimeoutMs,
        allowedHosts: this.options.callbackAllowedHosts,
      }),
    );
    const attemptsMade = delivery.attempts + 1;
    if (result.ok) {
      this.metrics.callbackAttempted(delivery.event, 'delivered');
      await this.store.recordAttempt(id, this.owner, {
        status: 'delivered',
        attemptedAt,
        nextAttemptAt: null,
        responseStatus: result.status ?? null,
        latencyMs: result.latencyMs,
        error: null,
      });
      await this.store.resetFailures(delivery.triggerId);
      return;
    }
    const gone = result.outcome === 'gone';
    const delay = gone ? null : nextAttemptDelay(attemptsMade, this.options.callbackRetryScheduleMs, result.retryAfterSec);
    const nextAttemptAt = delay === null ? null : new Date(this.clock.now() + delay);
    this.metrics.callbackAttempted(delivery.event, gone ? 'gone' : nextAttemptAt ? 'retrying' : 'failed');
    const recorded = await this.store.recordAttempt(id, this.owner, {
      status: nextAttemptAt ? 'pending' : 'failed',
      attemptedAt,
      nextAttemptAt,
      responseStatus: result.status ?? null,
      latencyMs: result.latencyMs,
      error: result.error ?? null,
    });
    if (!recorded) return;
    if (gone) {
      await this.disable(delivery, 'The receiver answered 410 Gone', 0);
    } else if (nextAttemptAt) {
      this.later(due, delay!);
    } else {
      const failures = await this.store.countFailure(delivery.triggerId);
      if (failures !== null && failures >= this.options.callbackDisableAfterFailures) {
        await this.disable(delivery, `${failures} deliveries in a row failed every attempt`, failures);
      }
    }
  }

  private async disable(delivery: DeliveryRecord, reason: string, failures: number): Promise<void> {
    if (!(await this.store.disable(delivery.triggerId, reason, new Date(this.clock.now())))) return;
    await this.bus.announceTriggerChanged(delivery.triggerId); // no node stores deliveries for it any more
    this.logger.warn(`The callback of trigger ${delivery.triggerId} was disabled: ${reason}`);
    this.events.callbackDisabled({ triggerId: delivery.triggerId, reason, consecutiveFailures: failures, deliveryId: delivery.id });
  }

  /** The next attempt of a delivery this process just tried, at its time (the sweep is the safety net). */
  private later(delivery: DueDelivery, delayMs: number): void {
    if (!this.started) return;
    const { id } = delivery;
    // A few ms late on purpose: a timer may fire a little before the clock reaches the stored due time.
    const timer = this.clock.setTimer(
      () => {
        this.timers.delete(id);
        this.deliver(delivery);
      },
      delayMs + 10,
      { unref: true },
    );
    this.timers.set(id, timer);
  }
}
