import { Inject, Injectable, Optional } from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost } from '@nestjs/core';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import {
  ACCOUNT_ID_PATTERN,
  INVOCATION_ID_PATTERN,
  newTriggerId,
  PLAIN_TEXT_200,
  PLAIN_TEXT_255,
  TRIGGER_ID_PATTERN,
} from '../keys/ids.js';
import { generateTriggerKey, hashTriggerKey, TriggerKeyCipher } from '../keys/trigger-keys.js';
import { CreditAccounts } from '../persistence/credit-accounts.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import type { InvocationRecord, TriggerRecord } from '../persistence/records.js';
import type { BotInputs } from '../bots/bot.types.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import { WEBHOOKS_PATH } from '../http/webhook-routes.js';
import {
  InvalidRequestError,
  WebhookAdminConflictError,
  WebhookAdminInputError,
  WebhookConfigurationError,
} from '../errors/webhook-trigger.errors.js';
import {
  ADMIN_WITHOUT_MODULE,
  BAD_ACCOUNT_ID,
  BAD_CREDITS,
  BAD_ADMIN_FIELD,
  BAD_TRIGGER_NAME,
  BODY_TOO_LARGE,
  REPLAY_TRIGGER_DELETED,
  TRIGGER_TYPE_UNSUPPORTED,
  UNKNOWN_BOT,
} from '../errors/webhook-trigger.messages.js';
import { InvocationService } from '../invocations/invocation.service.js';
import { CompletionBus, type RunChange } from '../completion/completion-bus.js';
import { parseTriggerBody } from '../http/webhook-body.parser.js';
import { INVOCATION_STATUSES } from '../persistence/records.js';
import type { HistoryQuery } from '../persistence/invocation.repository.js';
import { checkCallbackUrl } from '../callbacks/callback-address.js';
import { generateCallbackSecret } from '../callbacks/standard-webhooks.js';
import { CallbackOutbox, CallbackSecrets, DELIVERY_ID_PATTERN } from '../deliveries/callback-outbox.js';
import { CallbackStore } from '../persistence/callback-store.js';
import { CALLBACK_EVENTS, type CallbackEvent, type CallbackRecord, type DeliveryRecord } from '../persistence/records.js';

import {
  type BotSummary,
  type BotView,
  type CallbackInput,
  type CallbackView,
  type CreateTriggerInput,
  DELIVERIES_LISTED,
  type DeliveryView,
  type HistoryFilter,
  type InvocationDetail,
  type InvocationView,
  LISTED_OUTPUTS_MAX,
  RECENT_RUNS_CAP,
  type TimelineStep,
  type TriggerListItem,
  type TriggerView,
  type TriggerWithKey,
} from './admin-views.js';

/**
 * What the admin screens and API are built on, and what a host needs to build its own: create, list,
 * view, rotate and delete triggers, read, cancel and replay runs, and manage credits.
 * `WebhookTriggerAdminModule` mounts it over HTTP; use it directly to build your own.
 */
@Injectable()
export class WebhookTriggersAdmin {
  private readonly cipher: TriggerKeyCipher | null;

  constructor(
    private readonly registry: WebhookBotRegistry,
    private readonly triggers: TriggerRepository,
    private readonly invocations: InvocationRepository,
    private readonly accounts: CreditAccounts,
    private readonly service: InvocationService,
    private readonly bus: CompletionBus,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    @Optional() private readonly appConfig?: ApplicationConfig,
    @Optional() private readonly callbackStore?: CallbackStore,
    @Optional() private readonly callbackSecrets?: CallbackSecrets,
    @Optional() private readonly outbox?: CallbackOutbox,
    @Optional() private readonly adapterHost?: HttpAdapterHost,
  ) {
    this.cipher = options.keySecret ? new TriggerKeyCipher(options.keySecret) : null;
  }

  listBots(): BotView[] {
    return this.registry.list().map(({ id, name, accountId, credits }) => ({ id, name, accountId, credits }));
  }

  /** Every bot with its account's balance, its number of triggers and its runs of the last 24 hours. */
  async listBotSummaries(): Promise<BotSummary[]> {
    return Promise.all(this.listBots().map((bot) => this.summarize(bot)));
  }

  /** One bot's summary, or null when this app has no such bot. */
  async getBotSummary(botId: string): Promise<BotSummary | null> {
    const bot = this.listBots().find((b) => b.id === botId);
    return bot ? this.summarize(bot) : null;
  }

  private async summarize(bot: BotView): Promise<BotSummary> {
    const since = new Date(Date.now() - 24 * 60 * 60 * 1000);
    const [accountCredits, triggers, runsLast24h] = await Promise.all([
      this.accounts.getBalance(bot.accountId),
      this.triggers.listByBot(bot.id),
      this.invocations.countByBotSince(bot.id, since, RECENT_RUNS_CAP),
    ]);
    return { ...bot, accountCredits, triggers: triggers.length, runsLast24h };
  }

  /** Creates a trigger for a bot; the answer is the only time a key is shown when there is no `keySecret`. */
  async createTrigger(botId: string, input: CreateTriggerInput): Promise<TriggerWithKey> {
    const bot = this.registry.get(botId);
    if (!bot) throw new WebhookAdminInputError(UNKNOWN_BOT(String(botId).slice(0, 200)));
    const type = input?.type ?? 'webhook';
    if (type !== 'webhook') throw new WebhookAdminInputError(TRIGGER_TYPE_UNSUPPORTED(String(type).slice(0, 200)));
    const name = typeof input?.name === 'string' ? input.name.trim() : '';
    if (!PLAIN_TEXT_200.test(name)) throw new WebhookAdminInputError(BAD_TRIGGER_NAME);
    const key = generateTriggerKey();
    const record: TriggerRecord = {
      id: newTriggerId(),
      botId,
      accountId: bot.accountId,
      name,
      type: 'webhook',
      keyHash: hashTriggerKey(key),
      keyCiphertext: this.cipher?.encrypt(key) ?? null,
      createdAt: new Date(),
    };
    await this.triggers.create(record);
    // Trigger caches keep no misses, so nothing needs it yet; said anyway, so every trigger write is heard.
    await this.bus.announceTriggerChanged(record.id);
    return { ...this.toView(record), key };
  }

  /** A registered bot's triggers, oldest first, each with its last use ([] for a bot this app does not have). */
  async listTriggers(botId: string): Promise<TriggerListItem[]> {
    if (!this.registry.get(botId)) return [];
    const triggers = await this.triggers.listByBot(botId);
    const lastUsed = await this.invocations.lastUsedAt(triggers.map((t) => t.id));
    return triggers.map((t) => ({ ...this.toView(t), lastUsedAt: lastUsed.get(t.id) ?? null }));
  }

  /** The trigger with its key (decrypted with `keySecret`), or null when unknown or deleted. */
  async viewTrigger(triggerId: string): Promise<TriggerWithKey | null> {
    const trigger = TRIGGER_ID_PATTERN.test(triggerId) ? await this.triggers.findActive(triggerId) : null;
    if (!trigger) return null;
    const key = trigger.keyCiphertext && this.cipher ? this.cipher.decrypt(trigger.keyCiphertext) : null;
    return { ...this.toView(trigger), key };
  }

  /** Issues a new key; the old one stops working at once. Null when the trigger is unknown or deleted. */
  async rotateKey(triggerId: string): Promise<TriggerWithKey | null> {
    if (!TRIGGER_ID_PATTERN.test(triggerId)) return null;
    const key = generateTriggerKey();
    if (!(await this.triggers.replaceKey(triggerId, hashTriggerKey(key), this.cipher?.encrypt(key) ?? null))) return null;
    // Before answering: every node's trigger cache drops the old key (docs/scaling.md).
    await this.bus.announceTriggerChanged(triggerId);
    const trigger = await this.triggers.findActive(triggerId);
    return trigger ? { ...this.toView(trigger), key } : null;
  }

  /** Deletes a trigger and its callback: its URL answers 404 from now on; its runs stay in history. False when unknown. */
  async deleteTrigger(triggerId: string): Promise<boolean> {
    if (!TRIGGER_ID_PATTERN.test(triggerId) || !(await this.triggers.delete(triggerId))) return false;
    // Its callback goes with it: deliveries still pending are not sent.
    await this.callbackStore?.deleteCallback(triggerId);
    await this.bus.announceTriggerChanged(triggerId);
    return true;
  }

  /**
   * A bot's runs, newest first, filtered and paged by keyset ([] for a bot this app does not have; a number
   * is the limit). Outputs longer than `LISTED_OUTPUTS_MAX` characters of JSON are left out
   * (`outputs: null`, `outputsTruncated: true`): `getInvocation` gives them whole. Throws
   * `WebhookAdminInputError` for a bad filter (an unknown status, a cursor that is not one of the bot's runs).
   */
  async listInvocations(botId: string, filter: HistoryFilter | number = {}): Promise<InvocationView[]> {
    if (!this.registry.get(botId)) return [];
    // A bare number is the limit of the older signature, kept within 1–1000 as it always was.
    const given = typeof filter === 'number' ? { limit: Math.min(Math.max(1, Math.trunc(filter) || 1), 1000) } : filter;
    const query = await this.historyQuery(botId, given);
    const [rows, triggers] = await Promise.all([this.invocations.listByBot(botId, query), this.triggers.listByBot(botId)]);
    const names = new Map(triggers.map((t) => [t.id, t.name]));
    return rows.map((row) => this.toInvocationView(row, names.get(row.triggerId) ?? null));
  }

  private async historyQuery(botId: string, filter: HistoryFilter): Promise<HistoryQuery> {
    const bad = (field: string, problem: string) => new WebhookAdminInputError(BAD_ADMIN_FIELD(field, problem));
    const limit = filter.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw bad('limit', 'a whole number from 1 to 1000');
    if (filter.status !== undefined && !INVOCATION_STATUSES.includes(filter.status)) {
      throw bad('status', `one of ${INVOCATION_STATUSES.join(', ')}`);
    }
    for (const field of ['from', 'to'] as const) {
      const value = filter[field];
      if (value !== undefined && !(value instanceof Date && Number.isFinite(value.getTime()))) throw bad(field, 'an ISO 8601 time');
    }
    if (filter.triggerId !== undefined && !TRIGGER_ID_PATTERN.test(filter.triggerId)) throw bad('triggerId', 'a trigger id');
    if (filter.search !== undefined && !PLAIN_TEXT_255.test(filter.search)) throw bad('q', 'an invocation id or an idempotency key');
    const query: HistoryQuery = { limit, outputsUpTo: LISTED_OUTPUTS_MAX };
    if (filter.status !== undefined) query.status = filter.status;
    if (filter.triggerId !== undefined) query.triggerId = filter.triggerId;
    if (filter.from !== undefined) query.createdFrom = filter.from;
    if (filter.to !== undefined) query.createdBefore = filter.to;
    if (filter.search !== undefined) query.search = filter.search;
    if (filter.before !== undefined) {
      const cursor = INVOCATION_ID_PATTERN.test(filter.before) ? await this.invocations.findById(filter.before) : null;
      if (!cursor || cursor.botId !== botId) throw bad('before', "the id of one of this bot's runs (the last run of the previous page)");
      query.after = { createdAt: cursor.createdAt, id: cursor.id };
    }
    return query;
  }

  /** One run, whole (outputs included however long), or null when unknown. */
  async getInvocation(invocationId: string): Promise<InvocationView | null> {
    const row = INVOCATION_ID_PATTERN.test(invocationId) ? await this.invocations.findById(invocationId) : null;
    return row ? this.toInvocationView(row, null) : null;
  }

  /** One run with its trigger and timeline, for a detail screen; its inputs only with `showInputs`. Null when unknown. */
  async getInvocationDetail(invocationId: string, { showInputs = false } = {}): Promise<InvocationDetail | null> {
    const row = INVOCATION_ID_PATTERN.test(invocationId) ? await this.invocations.findById(invocationId) : null;
    return row ? this.toDetail(row, showInputs) : null;
  }

  /**
   * Cancels a queued or running run, whatever its trigger (a queued one is refunded; a running one's bot
   * is signalled). Null when unknown; throws `InvocationAlreadyFinishedError` (409) for a finished run.
   */
  async cancelInvocation(invocationId: string, { showInputs = false } = {}): Promise<InvocationDetail | null> {
    if (!INVOCATION_ID_PATTERN.test(invocationId)) return null;
    const row = await this.service.cancelById(invocationId);
    return row ? this.toDetail(row, showInputs) : null;
  }

  /**
   * Starts a new run through the same trigger with the same inputs, or `inputs` (checked like a trigger
   * body: a JSON object within `maxBodyBytes` and `maxJsonDepth`), charged as a new run. Null when the run
   * is unknown; throws `WebhookAdminConflictError` (409) when its trigger was deleted, and what a trigger
   * would (402 not enough credits, 503 shutting down or `maxQueuedRuns` reached).
   */
  async replayInvocation(invocationId: string, inputs?: unknown): Promise<{ id: string } | null> {
    const row = INVOCATION_ID_PATTERN.test(invocationId) ? await this.invocations.findById(invocationId) : null;
    if (!row) return null;
    const replayInputs = inputs === undefined ? row.inputs : this.checkInputs(inputs);
    const trigger = await this.triggers.findActive(row.triggerId);
    if (!trigger) throw new WebhookAdminConflictError(REPLAY_TRIGGER_DELETED(row.triggerId));
    const { id } = await this.service.start(trigger, replayInputs);
    return { id };
  }

  /** The rules of a trigger body, for inputs that came through the host's own JSON parser. */
  private checkInputs(inputs: unknown): BotInputs {
    let text: string | undefined;
    try {
      text = JSON.stringify(inputs);
    } catch {
      text = undefined; // cycles cannot come from JSON; a stack overflow from absurd depth can
    }
    if (text === undefined) throw new WebhookAdminInputError(BAD_ADMIN_FIELD('inputs', 'a JSON object'));
    const bytes = Buffer.from(text, 'utf8');
    if (bytes.length > this.options.maxBodyBytes) throw new WebhookAdminInputError(BODY_TOO_LARGE(this.options.maxBodyBytes));
    try {
      return parseTriggerBody(bytes, this.options.maxJsonDepth);
    } catch (error) {
      if (error instanceof InvalidRequestError) throw new WebhookAdminInputError(error.message);
      throw error;
    }
  }

  /**
   * Calls `listener` with every state change of runs (of `botId` when given) on every node the completion
   * bus reaches; returns the function that stops it.
   */
  watchRuns(botId: string | undefined, listener: (change: RunChange) => void): () => void {
    return this.bus.watchChanges((change) => {
      // An emitted output is not a state change; the history's rows change with states only.
      if (change.kind === 'output') return;
      if (botId === undefined || change.botId === botId) listener(change);
    });
  }

  /** The account's balance, or null when unknown (or not a possible account id). */
  async getCredits(accountId: string): Promise<{ id: string; credits: number } | null> {
    if (!ACCOUNT_ID_PATTERN.test(accountId)) return null;
    const credits = await this.accounts.getBalance(accountId);
    return credits === null ? null : { id: accountId, credits };
  }

  async setCredits(accountId: string, credits: number): Promise<{ id: string; credits: number }> {
    if (typeof accountId !== 'string' || !ACCOUNT_ID_PATTERN.test(accountId)) throw new WebhookAdminInputError(BAD_ACCOUNT_ID);
    if (!Number.isSafeInteger(credits) || credits < 0) throw new WebhookAdminInputError(BAD_CREDITS);
    await this.accounts.setBalance(accountId, credits);
    return { id: accountId, credits };
  }

  /**
   * Sets a trigger's callback (creates it with a new secret, or changes its URL and events, keeping the secret),
   * enabled again with no failures counted. Null when the trigger is unknown; throws `WebhookAdminInputError` for a
   * URL the sender would refuse (checkCallbackUrl, with `callbackAllowedHosts`) or an unknown event.
   */
  async setCallback(triggerId: string, input: CallbackInput): Promise<CallbackView | null> {
    const { store, secrets } = this.callbackParts();
    const url = input?.url;
    const problem = checkCallbackUrl(url, this.options.callbackAllowedHosts);
    if (problem) throw new WebhookAdminInputError(problem);
    const events = callbackEvents(input?.events);
    if (!(await this.activeTrigger(triggerId))) return null;
    const existing = await store.findCallback(triggerId);
    const secret = existing ? secrets.open(existing.secret) : null;
    // A secret that can no longer be read (keySecret changed) is replaced: nothing could be signed with it.
    const fresh = secret === null ? generateCallbackSecret() : null;
    await store.saveCallback({ triggerId, url: url, events, secret: fresh ? secrets.seal(fresh) : existing!.secret }, new Date());
    // Every node's copy of what the trigger's callback wants (CallbackOutbox) is dropped.
    await this.bus.announceTriggerChanged(triggerId);
    const saved = (await store.findCallback(triggerId))!;
    return this.callbackView(saved, fresh ?? (secrets.shown ? secret : null));
  }

  /** A trigger's callback (its secret only with `keySecret`), or null when the trigger or its callback is unknown. */
  async getCallback(triggerId: string): Promise<CallbackView | null> {
    const { store, secrets } = this.callbackParts();
    if (!(await this.activeTrigger(triggerId))) return null;
    const callback = await store.findCallback(triggerId);
    return callback ? this.callbackView(callback, secrets.shown ? secrets.open(callback.secret) : null) : null;
  }

  /** Removes a trigger's callback: its pending deliveries are not sent. False when there was none. */
  async deleteCallback(triggerId: string): Promise<boolean> {
    const { store } = this.callbackParts();
    if (!TRIGGER_ID_PATTERN.test(triggerId) || !(await store.deleteCallback(triggerId))) return false;
    await this.bus.announceTriggerChanged(triggerId);
    return true;
  }

  /** A new signing secret for the callback (the old one stops at once); null when there is no callback. */
  async rotateCallbackSecret(triggerId: string): Promise<CallbackView | null> {
    const { store, secrets } = this.callbackParts();
    if (!(await this.activeTrigger(triggerId))) return null;
    const secret = generateCallbackSecret();
    if (!(await store.replaceSecret(triggerId, secrets.seal(secret), new Date()))) return null;
    const callback = await store.findCallback(triggerId);
    return callback ? this.callbackView(callback, secret) : null;
  }

  /** A trigger's deliveries, newest first (at most `DELIVERIES_LISTED`); null when the trigger is unknown. */
  async listDeliveries(triggerId: string, limit = DELIVERIES_LISTED): Promise<DeliveryView[] | null> {
    const { store } = this.callbackParts();
    if (!(await this.activeTrigger(triggerId))) return null;
    const bounded = Math.min(Math.max(1, Math.trunc(limit) || 1), DELIVERIES_LISTED);
    return (await store.listByTrigger(triggerId, bounded)).map(deliveryView);
  }

  /** A run's deliveries, oldest first ([] for an unknown run). */
  async listInvocationDeliveries(invocationId: string): Promise<DeliveryView[]> {
    const { store } = this.callbackParts();
    return INVOCATION_ID_PATTERN.test(invocationId) ? (await store.listByInvocation(invocationId)).map(deliveryView) : [];
  }

  /**
   * Sends a delivery again, whatever its status: due at once, with the same webhook-id and body, attempts counted
   * on. False when unknown. (A disabled callback is enabled again by setting it.)
   */
  async redeliver(deliveryId: string): Promise<boolean> {
    const { store } = this.callbackParts();
    if (typeof deliveryId !== 'string' || !DELIVERY_ID_PATTERN.test(deliveryId)) return false;
    if (!(await store.redeliver(deliveryId, new Date()))) return false;
    this.outbox?.wake(deliveryId);
    return true;
  }

  private callbackParts(): { store: CallbackStore; secrets: CallbackSecrets } {
    if (!this.callbackStore || !this.callbackSecrets) throw new WebhookConfigurationError(ADMIN_WITHOUT_MODULE);
    return { store: this.callbackStore, secrets: this.callbackSecrets };
  }

  private async activeTrigger(triggerId: string): Promise<TriggerRecord | null> {
    return typeof triggerId === 'string' && TRIGGER_ID_PATTERN.test(triggerId) ? this.triggers.findActive(triggerId) : null;
  }

  private callbackView(c: CallbackRecord, secret: string | null): CallbackView {
    return {
      url: c.url,
      events: c.events,
      secret,
      enabled: c.enabled,
      consecutiveFailures: c.consecutiveFailures,
      disabledReason: c.disabledReason,
    };
  }

  /**
   * `{base}/{global prefix}/webhooks/{id}/trigger`: the URL a caller uses, with the host's `setGlobalPrefix()`.
   * The base is `publicBaseUrl` when set; else `origin` (the admin screens and API pass the one of the
   * request that views the trigger: see `requestOrigin`); else this app's own address once it listens
   * (`http://localhost:<port>`), `http://localhost:3000` before.
   */
  triggerUrl(triggerId: string, origin?: string): string {
    const prefix = this.appConfig?.getGlobalPrefix().replace(/^\/+|\/+$/g, '');
    const base = this.options.publicBaseUrl ?? origin ?? this.ownOrigin();
    return `${base}${prefix ? `/${prefix}` : ''}/${WEBHOOKS_PATH}/${triggerId}/trigger`;
  }

  /** This app's own address, from the port its HTTP server listens on. */
  private ownOrigin(): string {
    const server = this.adapterHost?.httpAdapter?.getHttpServer() as { address?: () => unknown } | undefined;
    const address = typeof server?.address === 'function' ? server.address() : null;
    const port = typeof address === 'object' && address !== null ? (address as { port?: unknown }).port : undefined;
    return `http://localhost:${typeof port === 'number' ? port : 3000}`;
  }

  private toView(t: TriggerRecord): TriggerView {
    return {
      id: t.id,
      name: t.name,
      type: t.type,
      botId: t.botId,
      accountId: t.accountId,
      url: this.triggerUrl(t.id),
      createdAt: t.createdAt,
    };
  }

  private async toDetail(row: InvocationRecord, showInputs: boolean): Promise<InvocationDetail> {
    const trigger = await this.triggers.findActive(row.triggerId);
    const timeline: TimelineStep[] = [{ status: 'queued', at: row.createdAt }];
    if (row.startedAt) timeline.push({ status: 'running', at: row.startedAt });
    if (row.finishedAt) timeline.push({ status: row.status, at: row.finishedAt });
    const detail: InvocationDetail = {
      ...this.toInvocationView(row, trigger?.name ?? null),
      accountId: row.accountId,
      inputsHidden: !showInputs,
      trigger: { id: row.triggerId, name: trigger?.name ?? null, deleted: !trigger },
      timeline,
    };
    if (showInputs) detail.inputs = row.inputs;
    return detail;
  }

  private toInvocationView(row: InvocationRecord, triggerName: string | null): InvocationView {
    const { id, triggerId, botId, status, credits, createdAt, startedAt, finishedAt, outputs, error, idempotencyKey } = row;
    return {
      id,
      triggerId,
      botId,
      status,
      credits,
      createdAt,
      startedAt,
      finishedAt,
      durationMs: startedAt && finishedAt ? finishedAt.getTime() - startedAt.getTime() : null,
      outputs,
      outputsTruncated: row.outputsTruncated === true,
      error,
      triggerName,
      idempotencyKey,
    };
  }
}

/** The events given, checked, in the canonical order, with `invocation.completed` always among them. */
function callbackEvents(given: unknown): CallbackEvent[] {
  if (given === undefined || given === null) return ['invocation.completed'];
  if (!Array.isArray(given) || given.some((e) => typeof e !== 'string' || !(CALLBACK_EVENTS as readonly string[]).includes(e))) {
    throw new WebhookAdminInputError(BAD_ADMIN_FIELD('events', `a list of ${CALLBACK_EVENTS.join(', ')}`));
  }
  const chosen = new Set<string>([...(given as string[]), 'invocation.completed']);
  return CALLBACK_EVENTS.filter((e) => chosen.has(e));
}

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
