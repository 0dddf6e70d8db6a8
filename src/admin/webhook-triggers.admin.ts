import { Injectable, type Provider } from '@nestjs/common';
import type { RunChange } from '../cluster/cluster-bus.js';
import type { RequestSigning } from '../persistence/records.js';
import type {
  AccountCredits,
  BotSummary,
  BotView,
  CallbackInput,
  CallbackView,
  CreatedTriggerKeyView,
  CreateTriggerInput,
  CreateTriggerKeyInput,
  DeliveryView,
  RequestSigningView,
  RotatedSigningSecret,
  HistoryFilter,
  InvocationDetail,
  InvocationView,
  OverviewView,
  OverviewWindow,
  RotatedTriggerKey,
  TriggerKeyView,
  TriggerListItem,
  TriggerWithKey,
  TriggerWithNewKey,
} from './admin-views.js';
import { AdminTriggerKeys } from './service/admin-trigger-keys.js';
import { AdminAudit } from './audit/admin-audit.js';
import type { AuditFilter, AuditPage } from './audit/audit-views.js';
import { AdminAllowedIps } from './service/admin-allowed-ips.js';
import { AdminAuditLog } from './service/admin-audit-log.js';
import { AdminCallbacks } from './service/admin-callbacks.js';
import { AdminCredits } from './service/admin-credits.js';
import { AdminOverview } from './service/admin-overview.js';
import { AdminRunHistory } from './service/admin-run-history.js';
import { AdminSigning } from './service/admin-signing.js';
import { AdminTriggers } from './service/admin-triggers.js';
import { TriggerUrls } from './service/trigger-urls.js';

/**
 * What the admin screens and API are built on, and what a host needs to build its own: create, list,
 * view, rotate and delete triggers, read, cancel and replay runs, manage callbacks and credits.
 * `WebhookTriggerAdminModule` mounts it over HTTP; inject it to build your own UI.
 *
 * One service for the host, each method handing over to the part of the admin that owns it (triggers,
 * run history, callbacks, credits: `src/admin/service/`).
 */
@Injectable()
export class WebhookTriggersAdmin {
  constructor(
    private readonly triggers: AdminTriggers,
    private readonly history: AdminRunHistory,
    private readonly callbacks: AdminCallbacks,
    private readonly credits: AdminCredits,
    private readonly urls: TriggerUrls,
    private readonly keys: AdminTriggerKeys,
    private readonly signing: AdminSigning,
    private readonly allowedIps: AdminAllowedIps,
    private readonly auditLog: AdminAuditLog,
    private readonly overview: AdminOverview,
  ) {}

  // Bots and triggers

  /** The bots this app has, as registered. */
  listBots(): BotView[] {
    return this.triggers.listBots();
  }

  /** Every bot with its account's balance, its number of triggers and its runs of the last 24 hours. */
  listBotSummaries(): Promise<BotSummary[]> {
    return this.triggers.listBotSummaries();
  }

  /** One bot's summary, or null when this app has no such bot. */
  getBotSummary(botId: string): Promise<BotSummary | null> {
    return this.triggers.getBotSummary(botId);
  }

  /**
   * Creates a trigger for a bot; the answer is the only time a key is shown when there is no `keySecret`.
   * `origin` is the base of its `url` when `publicBaseUrl` is not set (see `triggerUrl`).
   */
  createTrigger(botId: string, input: CreateTriggerInput, origin?: string): Promise<TriggerWithNewKey> {
    return this.triggers.createTrigger(botId, input, origin);
  }

  /** A registered bot's triggers, oldest first, each with its last use ([] for a bot this app does not have). */
  listTriggers(botId: string, origin?: string): Promise<TriggerListItem[]> {
    return this.triggers.listTriggers(botId, origin);
  }

  /**
   * The trigger with its newest usable key (decrypted with `keySecret`; else null), or null when unknown or
   * deleted. Its other keys: `listKeys`.
   */
  viewTrigger(triggerId: string, origin?: string): Promise<TriggerWithKey | null> {
    return this.triggers.viewTrigger(triggerId, origin);
  }

  // Trigger keys (several per trigger; any usable one opens it)

  /**
   * Issues a new key; every other usable key keeps working until `graceEndsAt` (now + `keyRotationGraceMs`;
   * `0`: refused at once), never longer than it would have. Null when the trigger is unknown or deleted; throws
   * `WebhookAdminConflictError` (409) when the trigger would have more than `MAX_USABLE_KEYS` usable keys.
   */
  rotateKey(triggerId: string, origin?: string): Promise<RotatedTriggerKey | null> {
    return this.keys.rotateKey(triggerId, (trigger) => this.triggers.view(trigger, origin));
  }

  /** The trigger's keys not revoked, oldest first, never a plain key; null when the trigger is unknown. */
  listKeys(triggerId: string): Promise<TriggerKeyView[] | null> {
    return this.keys.listKeys(triggerId);
  }

  /**
   * Adds a key (its plain key is in the answer); null when the trigger is unknown. Throws `WebhookAdminInputError`
   * for a bad label or an expiry not in the future, `WebhookAdminConflictError` (409) past `MAX_USABLE_KEYS`.
   */
  createKey(triggerId: string, input?: CreateTriggerKeyInput): Promise<CreatedTriggerKeyView | null> {
    return this.keys.createKey(triggerId, input);
  }

  /** Revokes one key: refused at once, on every node. False when the trigger or key is unknown or already revoked. */
  revokeKey(triggerId: string, keyId: string): Promise<boolean> {
    return this.keys.revokeKey(triggerId, keyId);
  }

  /** Deletes a trigger and its callback: its URL answers 404 from now on; its runs stay in history. False when unknown. */
  deleteTrigger(triggerId: string): Promise<boolean> {
    return this.triggers.deleteTrigger(triggerId);
  }

  /**
   * Replaces the trigger's IP allow-list: addresses and CIDRs, IPv4 or IPv6 (`203.0.113.0/24`, `2001:db8::/32`),
   * at most 100; `[]` lets every address in. Every entry is checked first (`WebhookAdminInputError` naming the
   * bad one, nothing stored). Applies on every node before it answers. Null when the trigger is unknown.
   */
  setAllowedIps(triggerId: string, allowedIps: string[]): Promise<string[] | null> {
    return this.allowedIps.setAllowedIps(triggerId, allowedIps);
  }

  /**
   * `{base}/{global prefix}/webhooks/{id}/trigger`: the URL a caller uses, with the host's `setGlobalPrefix()`
   * (without the prefix when its `exclude` covers the trigger route, as Nest's router then serves it).
   * The base is `publicBaseUrl` when set; else `origin` (the admin screens and API pass the one of the
   * request that views the trigger: see `requestOrigin`); else this app's own address once it listens
   * (`http://localhost:<port>`), `http://localhost:3000` before.
   */
  triggerUrl(triggerId: string, origin?: string): string {
    return this.urls.triggerUrl(triggerId, origin);
  }

  // Signed requests (docs/security.md, "Signed requests")

  /** The trigger's signed-request mode and its signing secrets (never the secrets themselves); null when unknown. */
  getRequestSigning(triggerId: string): Promise<RequestSigningView | null> {
    return this.signing.getRequestSigning(triggerId);
  }

  /**
   * Sets whether the trigger's requests must be signed: `off`, `with-key` (X-Key and a signature) or
   * `instead-of-key` (a signature, no X-Key). Null when the trigger is unknown; throws `WebhookAdminInputError`
   * for another value.
   */
  setRequestSigning(triggerId: string, mode: RequestSigning): Promise<RequestSigningView | null> {
    return this.signing.setRequestSigning(triggerId, mode);
  }

  /**
   * A new signing secret, shown in this answer only; the trigger's older secrets keep verifying for
   * `keyRotationGraceMs`, then stop. Null when the trigger is unknown.
   */
  rotateSigningSecret(triggerId: string): Promise<RotatedSigningSecret | null> {
    return this.signing.rotateSigningSecret(triggerId);
  }

  /** Stops one signing secret at once. Null when the trigger or the secret is unknown, or it was already revoked. */
  revokeSigningSecret(triggerId: string, secretId: string): Promise<RequestSigningView | null> {
    return this.signing.revokeSigningSecret(triggerId, secretId);
  }

  // Run history

  /**
   * A bot's runs, newest first, filtered and paged by keyset ([] for a bot this app does not have).
   * Outputs longer than `LISTED_OUTPUTS_MAX` characters of JSON are left out (`outputs: null`,
   * `outputsTruncated: true`): `getInvocation` gives them whole. Throws `WebhookAdminInputError` for a bad
   * filter (a limit outside 1–1000, an unknown status, a cursor that is not one of the bot's runs).
   */
  listInvocations(botId: string, filter: HistoryFilter = {}): Promise<InvocationView[]> {
    return this.history.listInvocations(botId, filter);
  }

  /** One run, whole (outputs included however long), or null when unknown. */
  getInvocation(invocationId: string): Promise<InvocationView | null> {
    return this.history.getInvocation(invocationId);
  }

  /** One run with its trigger and timeline, for a detail screen; its inputs only with `showInputs`. Null when unknown. */
  getInvocationDetail(invocationId: string, options: { showInputs?: boolean } = {}): Promise<InvocationDetail | null> {
    return this.history.getInvocationDetail(invocationId, options);
  }

  /**
   * Cancels a queued or running run, whatever its trigger (a queued one is refunded; a running one's bot
   * is signalled). Null when unknown; throws `InvocationAlreadyFinishedError` (409) for a finished run.
   */
  cancelInvocation(invocationId: string, options: { showInputs?: boolean } = {}): Promise<InvocationDetail | null> {
    return this.history.cancelInvocation(invocationId, options);
  }

  /**
   * Starts a new run through the same trigger with the same inputs, or `inputs` (checked like a trigger
   * body: a JSON object within `maxBodyBytes` and `maxJsonDepth`), charged as a new run. Null when the run
   * is unknown; throws `WebhookAdminConflictError` (409) when its trigger was deleted, and what a trigger
   * would (402 not enough credits, 503 shutting down or `maxQueuedRuns` reached).
   */
  replayInvocation(invocationId: string, inputs?: unknown): Promise<{ id: string } | null> {
    return this.history.replayInvocation(invocationId, inputs);
  }

  /**
   * Calls `listener` with every state change of runs (of `botId` when given) on every node the completion
   * bus reaches; returns the function that stops it.
   */
  watchRuns(botId: string | undefined, listener: (change: RunChange) => void): () => void {
    return this.history.watchRuns(botId, listener);
  }

  // Overview

  /**
   * Runs of every node over the last `hour` (by minute) or `day` (by half hour): finished per bucket by status,
   * p50/p95 of duration and queue wait, the backlog now and how callbacks fare (docs/admin.md "Overview").
   * Throws `WebhookAdminInputError` for another window.
   */
  getOverview(window: OverviewWindow = 'hour'): Promise<OverviewView> {
    return this.overview.getOverview(window);
  }

  // Audit log

  /**
   * The audit log, newest first, filtered and paged (`next` → `cursor` of the following page). Every change made
   * through this service is recorded with the principal of `AuditContext.run` (the admin API sets it from
   * `auditPrincipal`). Throws `WebhookAdminInputError` for a bad filter.
   */
  listAuditLog(filter: AuditFilter = {}): Promise<AuditPage> {
    return this.auditLog.listAuditLog(filter);
  }

  // Credits

  /** The account's balance, or null when unknown (or not a possible account id). */
  getCredits(accountId: string): Promise<AccountCredits | null> {
    return this.credits.getCredits(accountId);
  }

  /** Sets the account's balance (opening the account); throws `WebhookAdminInputError` unless a whole number ≥ 0. */
  setCredits(accountId: string, credits: number): Promise<AccountCredits> {
    return this.credits.setCredits(accountId, credits);
  }

  // Callbacks and deliveries

  /**
   * Sets a trigger's callback (creates it with a new secret, or changes its URL and events, keeping the secret),
   * enabled again with no failures counted. Null when the trigger is unknown; throws `WebhookAdminInputError` for a
   * URL the sender would refuse (checkCallbackUrl, with `callbackAllowedHosts`) or an unknown event.
   */
  setCallback(triggerId: string, input: CallbackInput): Promise<CallbackView | null> {
    return this.callbacks.setCallback(triggerId, input);
  }

  /** A trigger's callback (its secret only with `keySecret`), or null when the trigger or its callback is unknown. */
  getCallback(triggerId: string): Promise<CallbackView | null> {
    return this.callbacks.getCallback(triggerId);
  }

  /** Removes a trigger's callback: its pending deliveries are not sent. False when there was none. */
  deleteCallback(triggerId: string): Promise<boolean> {
    return this.callbacks.deleteCallback(triggerId);
  }

  /** A new signing secret for the callback (the old one stops at once); null when there is no callback. */
  rotateCallbackSecret(triggerId: string): Promise<CallbackView | null> {
    return this.callbacks.rotateCallbackSecret(triggerId);
  }

  /** A trigger's deliveries, newest first (at most `DELIVERIES_LISTED`); null when the trigger is unknown. */
  listDeliveries(triggerId: string, limit?: number): Promise<DeliveryView[] | null> {
    return this.callbacks.listDeliveries(triggerId, limit);
  }

  /** A run's deliveries, oldest first ([] for an unknown run). */
  listInvocationDeliveries(invocationId: string): Promise<DeliveryView[]> {
    return this.callbacks.listInvocationDeliveries(invocationId);
  }

  /**
   * Sends a delivery again, whatever its status: due at once, with the same webhook-id and body, attempts counted
   * on. False when unknown. (A disabled callback is enabled again by setting it.)
   */
  redeliver(deliveryId: string): Promise<boolean> {
    return this.callbacks.redeliver(deliveryId);
  }
}

/** The admin service and the parts it hands over to: providers of `WebhookTriggerModule`, which exports the service. */
export const ADMIN_SERVICE_PROVIDERS: Provider[] = [
  WebhookTriggersAdmin,
  AdminTriggers,
  AdminTriggerKeys,
  AdminRunHistory,
  AdminCallbacks,
  AdminCredits,
  TriggerUrls,
  AdminSigning,
  AdminAllowedIps,
  AdminAuditLog,
  AdminAudit,
  AdminOverview,
];
