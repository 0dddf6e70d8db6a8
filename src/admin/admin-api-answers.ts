import type { RunChange } from '../cluster/cluster-bus.js';
import { WebhookAdminNotFoundError } from '../errors/webhook-trigger.errors.js';
import type { CallbackEvent, InvocationStatus } from '../persistence/records.js';
import type {
  BotSummary,
  CallbackView,
  CreatedTriggerKeyView,
  RotatedTriggerKey,
  TriggerKeyView,
  DeliveryView,
  RequestSigningView,
  RotatedSigningSecret,
  InvocationDetail,
  InvocationView,
  OverviewView,
  TriggerListItem,
  TriggerWithKey,
} from './admin-views.js';
import type { AuditPage } from './audit/audit-views.js';

// What each admin API route answers, and the one place each answer is shaped from the service's views (views the
// API sends as they are pass through). The controller's methods return the server-side shapes (Dates as Date);
// the screens (admin-ui/, `// @ts-check`) read `Json<…>` of them, which is what JSON.stringify makes of them.

/** A value as it arrives over JSON: every Date an ISO string, recursively. */
export type Json<T> = T extends Date ? string : T extends (infer U)[] ? Json<U>[] : T extends object ? { [K in keyof T]: Json<T[K]> } : T;

/** `GET api/bots` (a list) and `GET api/bots/:botId`: `credits` is named `creditsPerRun` over HTTP. */
export type AdminBot = Omit<BotSummary, 'credits'> & { creditsPerRun: BotSummary['credits'] };

/** `GET api/bots/:botId/triggers`, one element (no keys). */
export type ListedTrigger = Pick<TriggerListItem, 'id' | 'name' | 'type' | 'url' | 'createdAt' | 'lastUsedAt'>;

/** `POST api/bots/:botId/triggers`: the trigger with its key. */
export type CreatedTrigger = Pick<TriggerWithKey, 'id' | 'name' | 'type' | 'botId' | 'url' | 'key' | 'createdAt'>;

/** `GET api/triggers/:triggerId`: the trigger with its key (null without `keySecret`), its allow-list and its callback. */
export type ViewedTrigger = CreatedTrigger & { allowedIps: string[]; callback: AdminCallback | null };

/** `PUT api/triggers/:triggerId/allowed-ips`: the list stored ([] lets every address in). */
export interface AllowedIps {
  allowedIps: string[];
}

/** `GET api/audit-log`: a page of entries, newest first, and the cursor of the next page. */
export type AdminAuditPage = AuditPage;

/** `GET api/overview?window=hour|day`: every node's runs over the window, by bucket, and the state now. */
export type RunsOverview = OverviewView;

/**
 * `POST api/triggers/:triggerId/rotate-key`: the new key (`keyId`), and until when the trigger's other keys
 * keep working (`graceEndsAt`).
 */
export type RotatedKey = Pick<RotatedTriggerKey, 'id' | 'url' | 'key' | 'keyId' | 'graceEndsAt'>;

/** `GET api/triggers/:triggerId/keys`, one element: never the key itself. */
export type AdminTriggerKey = TriggerKeyView;

/** `POST api/triggers/:triggerId/keys`: the new key, shown in full this once (and with `keySecret` in the View). */
export type CreatedKey = CreatedTriggerKeyView;

/** `GET`, `PUT` `api/triggers/:triggerId/callback` and `POST …/callback/rotate-secret`. */
export type AdminCallback = Pick<CallbackView, 'url' | 'events' | 'secret' | 'enabled' | 'consecutiveFailures' | 'disabledReason'>;

/** `GET`, `PUT` `api/triggers/:triggerId/signing` and `POST …/signing/secrets/:secretId/revoke`: never a secret. */
export type AdminRequestSigning = RequestSigningView;

/** `POST api/triggers/:triggerId/signing/secrets`: the new secret, shown this once. */
export type AdminRotatedSigningSecret = RotatedSigningSecret;

/** `GET api/triggers/:triggerId/deliveries` and `GET api/invocations/:invocationId/deliveries`, one element. */
export type AdminDelivery = DeliveryView;

/** `POST api/deliveries/:deliveryId/redeliver`. */
export interface Redelivery {
  id: string;
  status: 'pending';
}

/** `GET api/bots/:botId/invocations`, one element: the bot's id is the route's. */
export type ListedRun = Omit<InvocationView, 'botId'>;

/** `GET api/invocations/:invocationId` and `POST …/cancel`. */
export type AdminRun = InvocationDetail;

/** `POST api/invocations/:invocationId/replay`: the new run. */
export interface ReplayedRun {
  id: string;
}

/** `GET api/accounts/:accountId` and `PUT …/credits`. */
export interface AdminAccount {
  id: string;
  credits: number;
}

/** The data of an `invocation` event on `GET api/events` (a run changed state, or stored an output). */
export type RunEvent = RunChange;

/** What the screens' page carries (`<html data-config>`, JSON): the server's own lists, so the screens copy none. */
export interface AdminPageConfig {
  /** Every run status, in the order of a run's life (the History filter lists them). */
  statuses: InvocationStatus[];
  /** The statuses a run leaves (queued, running): a run in one is followed live and may be cancelled. */
  activeStatuses: InvocationStatus[];
  /** Every event a callback may send; `alwaysSentEvent` among them. */
  callbackEvents: CallbackEvent[];
  /** The event every callback sends. */
  alwaysSentEvent: CallbackEvent;
  /** Runs per History page (`limit` of `GET api/bots/:botId/invocations`). */
  historyPageSize: number;
  /** Most runs the bots list counts per bot (`runsLast24h` stops there). */
  recentRunsCap: number;
  /** Every action the audit log records (its Action filter lists them). */
  auditActions: string[];
  /** Entries per Audit log page (`limit` of `GET api/audit-log`). */
  auditPageSize: number;
}

/** The answers as the screens read them. */
export type AdminBotAnswer = Json<AdminBot>;
export type ListedTriggerAnswer = Json<ListedTrigger>;
export type CreatedTriggerAnswer = Json<CreatedTrigger>;
export type ViewedTriggerAnswer = Json<ViewedTrigger>;
export type RotatedKeyAnswer = Json<RotatedKey>;
export type AdminTriggerKeyAnswer = Json<AdminTriggerKey>;
export type CreatedKeyAnswer = Json<CreatedKey>;
export type AdminCallbackAnswer = Json<AdminCallback>;
export type AdminRequestSigningAnswer = Json<AdminRequestSigning>;
export type AdminRotatedSigningSecretAnswer = Json<AdminRotatedSigningSecret>;
export type AdminDeliveryAnswer = Json<AdminDelivery>;
export type RedeliveryAnswer = Json<Redelivery>;
export type ListedRunAnswer = Json<ListedRun>;
export type AdminRunAnswer = Json<AdminRun>;
export type ReplayedRunAnswer = Json<ReplayedRun>;
export type AdminAccountAnswer = Json<AdminAccount>;
export type RunEventAnswer = Json<RunEvent>;
export type AllowedIpsAnswer = Json<AllowedIps>;
export type AdminAuditPageAnswer = Json<AdminAuditPage>;
export type RunsOverviewAnswer = Json<RunsOverview>;

/** A bot in `GET api/bots`: its per-run price named for the screens. */
export function botAnswer({ id, name, accountId, credits, accountCredits, triggers, runsLast24h }: BotSummary): AdminBot {
  return { id, name, accountId, creditsPerRun: credits, accountCredits, triggers, runsLast24h };
}

/** A trigger created or viewed (with its key). */
export function triggerAnswer({ id, name, type, botId, url, key, createdAt }: TriggerWithKey): CreatedTrigger {
  return { id, name, type, botId, url, key, createdAt };
}

/** A trigger in a bot's list (no key). */
export function listedTriggerAnswer({ id, name, type, url, createdAt, lastUsedAt }: TriggerListItem): ListedTrigger {
  return { id, name, type, url, createdAt, lastUsedAt };
}

/** A rotated key. */
export function rotatedKeyAnswer({ id, url, key, keyId, graceEndsAt }: RotatedTriggerKey): RotatedKey {
  return { id, url, key, keyId, graceEndsAt };
}

/** A key in a trigger's list (the view carries no key: picked, so a later field cannot leak into the list). */
export function triggerKeyAnswer({ id, label, createdAt, lastUsedAt, expiresAt, inGrace, usable }: TriggerKeyView): AdminTriggerKey {
  return { id, label, createdAt, lastUsedAt, expiresAt, inGrace, usable };
}

/** A run in a bot's history page: the bot is the page's. */
export function listedRunAnswer({ botId: _bot, ...run }: InvocationView): ListedRun {
  return run;
}

/** A redelivery accepted. */
export function redeliveryAnswer(deliveryId: string): Redelivery {
  return { id: deliveryId, status: 'pending' as const };
}

/** The value, or a 404 with `message` when the service found nothing. */
export function found<T>(value: T | null, message: string): T {
  if (value === null) throw new WebhookAdminNotFoundError(message);
  return value;
}
