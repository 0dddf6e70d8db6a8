import { Inject, Injectable } from '@nestjs/common';
import { checkCallbackUrl } from '../../callbacks/callback-address.js';
import { generateCallbackSecret } from '../../callbacks/standard-webhooks.js';
import { ClusterBus } from '../../cluster/cluster-bus.js';
import { CallbackOutbox, DELIVERY_ID_PATTERN } from '../../deliveries/callback-outbox.js';
import { SecretsAtRest } from '../../keys/secrets-at-rest.js';
import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { BAD_ADMIN_FIELD } from '../../errors/webhook-trigger.messages.js';
import { INVOCATION_ID_PATTERN, TRIGGER_ID_PATTERN } from '../../keys/ids.js';
import { RESOLVED_OPTIONS } from '../../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../../options/webhook-trigger-options.interface.js';
import { CallbackStore } from '../../persistence/callback-store.js';
import {
  CALLBACK_EVENTS,
  type CallbackEvent,
  type CallbackRecord,
  type DeliveryRecord,
  type TriggerRecord,
} from '../../persistence/records.js';
import { TriggerRepository } from '../../persistence/trigger.repository.js';
import { Clock } from '../../time/clock.js';
import { AdminAudit } from '../audit/admin-audit.js';
import { type CallbackInput, type CallbackView, DELIVERIES_LISTED, type DeliveryView } from '../admin-views.js';

/** A trigger's signed callback and its deliveries, for the admin: set, read, rotate, remove, redeliver. Behind `WebhookTriggersAdmin`. */
@Injectable()
export class AdminCallbacks {
  constructor(
    private readonly triggers: TriggerRepository,
    private readonly store: CallbackStore,
    private readonly secrets: SecretsAtRest,
    private readonly outbox: CallbackOutbox,
    private readonly bus: ClusterBus,
    private readonly audit: AdminAudit,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    @Inject(Clock) private readonly clock: Clock,
  ) {}

  async setCallback(triggerId: string, input: CallbackInput): Promise<CallbackView | null> {
    const url = input?.url;
    const problem = checkCallbackUrl(url, this.options.callbackAllowedHosts);
    if (problem) throw new WebhookAdminInputError(problem);
    const events = callbackEvents(input?.events);
    if (!(await this.activeTrigger(triggerId))) return null;
    const existing = await this.store.findCallback(triggerId);
    const secret = existing ? this.secrets.open(existing.secret) : null;
    // A secret that can no longer be read (keySecret changed) is replaced: nothing could be signed with it.
    const fresh = secret === null ? generateCallbackSecret() : null;
    await this.store.saveCallback(
      { triggerId, url, events, secret: fresh ? this.secrets.seal(fresh) : existing!.secret },
      new Date(this.clock.now()),
    );
    // Every node's copy of what the trigger's callback wants (CallbackOutbox) is dropped.
    await this.bus.announceTriggerChanged(triggerId);
    await this.audit.callbackSet(triggerId, !existing, url, events);
    const saved = (await this.store.findCallback(triggerId))!;
    return view(saved, fresh ?? (this.secrets.shown ? secret : null));
  }

  async getCallback(triggerId: string): Promise<CallbackView | null> {
    if (!(await this.activeTrigger(triggerId))) return null;
    const callback = await this.store.findCallback(triggerId);
    return callback ? view(callback, this.secrets.shown ? this.secrets.open(callback.secret) : null) : null;
  }

  async deleteCallback(triggerId: string): Promise<boolean> {
    if (!TRIGGER_ID_PATTERN.test(triggerId) || !(await this.store.deleteCallback(triggerId))) return false;
    await this.bus.announceTriggerChanged(triggerId);
    await this.audit.callbackDeleted(triggerId);
    return true;
  }

  async rotateCallbackSecret(triggerId: string): Promise<CallbackView | null> {
    if (!(await this.activeTrigger(triggerId))) return null;
    const secret = generateCallbackSecret();
    if (!(await this.store.replaceSecret(triggerId, this.secrets.seal(secret), new Date(this.clock.now())))) return null;
    await this.audit.callbackSecretRotated(triggerId);
    const callback = await this.store.findCallback(triggerId);
    return callback ? view(callback, secret) : null;
  }

  async listDeliveries(triggerId: string, limit = DELIVERIES_LISTED): Promise<DeliveryView[] | null> {
    if (!(await this.activeTrigger(triggerId))) return null;
    const bounded = Math.min(Math.max(1, Math.trunc(limit) || 1), DELIVERIES_LISTED);
    return (await this.store.listByTrigger(triggerId, bounded)).map(deliveryView);
  }

  async listInvocationDeliveries(invocationId: string): Promise<DeliveryView[]> {
    return INVOCATION_ID_PATTERN.test(invocationId) ? (await this.store.listByInvocation(invocationId)).map(deliveryView) : [];
  }

  async redeliver(deliveryId: string): Promise<boolean> {
    if (typeof deliveryId !== 'string' || !DELIVERY_ID_PATTERN.test(deliveryId)) return false;
    if (!(await this.store.redeliver(deliveryId, new Date(this.clock.now())))) return false;
    // Its trigger and account: the sender's places are counted per callback and per account.
    const delivery = await this.store.findDelivery(deliveryId);
    const trigger = delivery ? await this.triggers.findActive(delivery.triggerId) : null;
    if (delivery) this.outbox.wake(deliveryId, delivery.triggerId, trigger?.accountId);
    await this.audit.redelivered(deliveryId);
    return true;
  }

  private async activeTrigger(triggerId: string): Promise<TriggerRecord | null> {
    return typeof triggerId === 'string' && TRIGGER_ID_PATTERN.test(triggerId) ? this.triggers.findActive(triggerId) : null;
  }
}

/** The events given, checked, in the canonical order, with `invocation.completed` always among them. */
export function callbackEvents(given: unknown): CallbackEvent[] {
  if (given === undefined || given === null) return ['invocation.completed'];
  if (!Array.isArray(given) || given.some((e) => typeof e !== 'string' || !(CALLBACK_EVENTS as readonly string[]).includes(e))) {
    throw new WebhookAdminInputError(BAD_ADMIN_FIELD('events', `a list of ${CALLBACK_EVENTS.join(', ')}`));
  }
  const chosen = new Set<string>([...(given as string[]), 'invocation.completed']);
  return CALLBACK_EVENTS.filter((e) => chosen.has(e));
}

/** The one place a callback record becomes a view; `secret` is what may be shown of it. */
function view(c: CallbackRecord, secret: string | null): CallbackView {
  return {
    url: c.url,
    events: c.events,
    secret,
    enabled: c.enabled,
    consecutiveFailures: c.consecutiveFailures,
    disabledReason: c.disabledReason,
  };
}

/** The one place a delivery record becomes a view (its body and webhook-id stay out). */
function deliveryView(d: DeliveryRecord): DeliveryView {
  return {
    id: d.id,
    invocationId: d.invocationId,
    event: d.event,
    attempts: d.attempts,
    status: d.status,
    responseStatus: d.responseStatus,
    lastAttemptAt: d.lastAttemptAt,
    nextAttemptAt: d.nextAttemptAt,
    latencyMs: d.latencyMs,
    error: d.lastError,
    createdAt: d.createdAt,
  };
}
