import { Inject, Injectable, Logger } from '@nestjs/common';
import { LOG_CONTEXT } from '../options/module.constants.js';
import { HOST_EVENT_EMITTER, type HostEventEmitter } from './host-event-emitter.js';
import type { InvocationRecord, InvocationStatus } from '../persistence/records.js';
import { ClusterBus } from '../cluster/cluster-bus.js';
import { WebhookMetrics, type RunFacts } from '../telemetry/webhook-metrics.js';

/** Event names emitted through @nestjs/event-emitter, one per state a run enters (`running` → `started`). */
export const WEBHOOK_EVENTS = {
  queued: 'webhook-trigger.invocation.queued',
  started: 'webhook-trigger.invocation.started',
  succeeded: 'webhook-trigger.invocation.succeeded',
  failed: 'webhook-trigger.invocation.failed',
  cancelled: 'webhook-trigger.invocation.cancelled',
  timed_out: 'webhook-trigger.invocation.timed_out',
} as const satisfies Record<Exclude<InvocationStatus, 'running'> | 'started', string>;

/** Emitted when a trigger's callback is disabled (410 Gone, or too many failed deliveries in a row). */
export const CALLBACK_DISABLED_EVENT = 'webhook-trigger.callback.disabled';

/** Payload of `webhook-trigger.callback.disabled`. */
export interface CallbackDisabledEvent {
  triggerId: string;
  reason: string;
  /** Deliveries in a row that used up their schedule (0 when the receiver answered 410). */
  consecutiveFailures: number;
  /** The delivery whose attempt disabled it. */
  deliveryId: string;
}

/** Payload of every `webhook-trigger.invocation.*` event. */
export interface InvocationEvent {
  invocationId: string;
  triggerId: string;
  botId: string;
  accountId: string;
  status: InvocationStatus;
  /** Set on finished runs: from start to finish. */
  durationMs?: number;
}

/**
 * Announces every state change on the cluster bus (the admin's live history, on every node the bus
 * reaches) and emits it through the host's EventEmitter2. The emitter is optional on purpose: importing
 * EventEmitterModule.forRoot() here as well would give the app two emitters and double-bound listeners.
 * Its own folder because the service (invocations/), the executor (runs/) and the interrupted-run
 * policy (lifecycle/) all emit, and invocations/ sits above the other two.
 */
@Injectable()
export class InvocationEvents {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly bus: ClusterBus,
    // Always provided by the module (null when the host has no EventEmitter2): hostEventEmitterProvider.
    @Inject(HOST_EVENT_EMITTER) private readonly emitter: HostEventEmitter | null,
    private readonly metrics: WebhookMetrics,
  ) {}

  /** A running run stored an output its bot emitted: announced for its event streams (no host event). */
  output(invocation: Pick<InvocationRecord, 'id' | 'triggerId' | 'botId'>): void {
    this.bus.announce({
      invocationId: invocation.id,
      botId: invocation.botId,
      triggerId: invocation.triggerId,
      status: 'running',
      kind: 'output',
    });
  }

  /** A trigger's callback was disabled: emitted through the host's EventEmitter2 (when it has one). */
  callbackDisabled(event: CallbackDisabledEvent): void {
    this.send(CALLBACK_DISABLED_EVENT, event);
  }

  /** A run entered `status`: announced, counted in the metrics (credits charged, queue wait, finished runs) and emitted. */
  emit(invocation: Pick<InvocationRecord, 'id' | 'triggerId'> & RunFacts, status: InvocationStatus, durationMs?: number): void {
    this.metrics.runChanged(invocation, status, durationMs);
    this.bus.announce({ invocationId: invocation.id, botId: invocation.botId, triggerId: invocation.triggerId, status });
    if (!this.emitter) return;
    const event: InvocationEvent = {
      invocationId: invocation.id,
      triggerId: invocation.triggerId,
      botId: invocation.botId,
      accountId: invocation.accountId,
      status,
    };
    if (durationMs !== undefined) event.durationMs = durationMs;
    this.send(status === 'running' ? WEBHOOK_EVENTS.started : WEBHOOK_EVENTS[status], event);
  }

  /**
   * Emits through the host's emitter. A host's plain `emitter.on()` listener runs inside this call (`@OnEvent`
   * handlers are guarded by Nest), so what it throws is logged here: a run goes on whatever a listener does
   * (it would otherwise end the trigger request with a 500 after the charge, or a run before its outcome). An
   * `async` listener's rejection is logged too (`emitAsync` hands it over; `emit` would leave it unhandled,
   * which ends a Node process by default). Listeners are called at once either way; nothing waits for them.
   */
  private send(name: string, event: InvocationEvent | CallbackDisabledEvent): void {
    if (!this.emitter) return;
    try {
      // A host's stand-in for EventEmitter2 (a test's `{ emit: jest.fn() }`) may have `emit` only.
      if (typeof this.emitter.emitAsync !== 'function') return void this.emitter.emit(name, event);
      const settled = this.emitter.emitAsync(name, event);
      if (settled) settled.catch((error: unknown) => this.listenerFailed(name, 'failed', error));
    } catch (error) {
      this.listenerFailed(name, 'threw', error);
    }
  }

  private listenerFailed(name: string, how: 'threw' | 'failed', error: unknown): void {
    this.logger.error(`A listener of ${name} ${how}; ignored`, error instanceof Error ? error.stack : String(error));
  }
}
