import type { BotOutput } from '../bots/bot.types.js';
import type { CallbackEvent, DeliveryStatus, InvocationError, InvocationStatus, RequestSigning } from '../persistence/records.js';
import type { FinishedStatus, Percentiles } from '../persistence/run-overview.js';

// What the admin service answers with (WebhookTriggersAdmin): the admin API sends these as JSON, and the
// screens are checked against them.

/** Longest outputs (bytes of JSON) a history list carries per run. */
export const LISTED_OUTPUTS_MAX = 8 * 1024;
/**
 * Longest error (bytes of JSON) a history list carries per run: a stored message is at most
 * MAX_ERROR_MESSAGE_CHARS (4096) characters, so only one heavy with escapes or non-ASCII text, or one stored by an older
 * version, is left out. With the outputs' bound, a page of 50 runs stays well under 1 MB.
 */
export const LISTED_ERROR_MAX = 8 * 1024;
/** Longest inputs (bytes of JSON) a history list reads per run; lists show no inputs, the run's detail does. */
export const LISTED_INPUTS_MAX = 1024;

export interface BotView {
  id: string;
  name: string;
  accountId: string;
  credits: number;
}

export interface TriggerView {
  id: string;
  name: string;
  type: 'webhook';
  botId: string;
  accountId: string;
  url: string;
  createdAt: Date;
  /** The addresses and CIDRs its requests must come from; [] lets every address in. */
  allowedIps: string[];
}

/** A trigger in a bot's list, with the time of its newest run. */
export interface TriggerListItem extends TriggerView {
  /** When the newest run through it was created; null when never used. */
  lastUsedAt: Date | null;
}

/** A bot with what the bots list shows about it. */
export interface BotSummary extends BotView {
  /** The owner account's balance; null when the account was never opened. */
  accountCredits: number | null;
  /** Active triggers. */
  triggers: number;
  /** Runs created in the last 24 hours, counted up to `RECENT_RUNS_CAP`. */
  runsLast24h: number;
}

/** Most runs the bots list counts per bot (it shows "10000+" beyond). */
export const RECENT_RUNS_CAP = 10_000;

export interface TriggerWithKey extends TriggerView {
  /** The key; null when the module has no `keySecret` and so cannot show it again. */
  key: string | null;
}

/** A trigger with a key just made (`createTrigger`, `rotateKey`): the key is always there, shown this once without `keySecret`. */
export interface TriggerWithNewKey extends TriggerWithKey {
  key: string;
}

/** One key of a trigger as the admin sees it: never the key itself. */
export interface TriggerKeyView {
  id: string;
  label: string;
  createdAt: Date;
  /** Last accepted request with it (written at most once a minute per process); null when never used. */
  lastUsedAt: Date | null;
  /** When it stops working; null: until revoked. */
  expiresAt: Date | null;
  /** True when `expiresAt` is the end of a rotation's grace period (a newer key replaced it). */
  inGrace: boolean;
  /** False once it expired (it stays listed until revoked). */
  usable: boolean;
}

/** A key just created: the only time its plain key is shown when the module has no `keySecret`. */
export interface CreatedTriggerKeyView extends TriggerKeyView {
  key: string;
}

/** What the admin gives to add a key. */
export interface CreateTriggerKeyInput {
  /** 1–200 characters. @default "Key <n>" */
  label?: string;
  /** An ISO 8601 time (or a Date) in the future; null or absent: until revoked. */
  expiresAt?: string | Date | null;
}

/** A rotation: the trigger with its new key, and until when its other keys keep working. */
export interface RotatedTriggerKey extends TriggerWithNewKey {
  /** The new key's id. */
  keyId: string;
  /** The end of the grace period (now + `keyRotationGraceMs`): the other keys are refused from then on. */
  graceEndsAt: Date;
}

export interface InvocationView {
  id: string;
  triggerId: string;
  botId: string;
  status: InvocationStatus;
  credits: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** From start to finish; null until the run finished (and for a run cancelled before it started). */
  durationMs: number | null;
  outputs: BotOutput[] | null;
  /** True in history lists when the outputs were too long to list (`outputs` is then null; see `getInvocation`). */
  outputsTruncated: boolean;
  error: InvocationError | null;
  /** True in history lists when the error was too long to list (`error` is then null; see `getInvocation`). */
  errorTruncated: boolean;
  /** The trigger's name; null when the trigger was deleted (and in `getInvocation`, which reads no trigger). */
  triggerName: string | null;
  idempotencyKey: string | null;
}

/** One step of a run's life, for a timeline. */
export interface TimelineStep {
  status: InvocationStatus;
  at: Date;
}

/** One run with everything a run detail screen shows. */
export interface InvocationDetail extends InvocationView {
  accountId: string;
  /** The run's inputs; absent unless asked for (`showInputs`), since inputs may hold secrets. */
  inputs?: Record<string, unknown>;
  inputsHidden: boolean;
  trigger: { id: string; name: string | null; deleted: boolean };
  /** queued at `createdAt`, running at `startedAt`, the final status at `finishedAt` (steps that happened). */
  timeline: TimelineStep[];
}

/** Runs per page of a bot's history: what the screens ask for (sent to them in the page). */
export const HISTORY_PAGE_SIZE = 50;

/** Filters and paging of a bot's history; every field optional. */
export interface HistoryFilter {
  /** 1–1000. @default 50 */
  limit?: number;
  status?: InvocationStatus;
  triggerId?: string;
  /** Runs created at or after this time. */
  from?: Date;
  /** Runs created before this time. */
  to?: Date;
  /** An exact invocation id or idempotency key. */
  search?: string;
  /** Keyset cursor: the id of the last run of the previous page; the page holds older runs. */
  before?: string;
}

/** A trigger's callback as the admin sees it. */
export interface CallbackView {
  url: string;
  /** Always includes `invocation.completed`. */
  events: CallbackEvent[];
  /** The `whsec_…` signing secret; null when it cannot be shown again (no `keySecret`: shown only when set or rotated). */
  secret: string | null;
  enabled: boolean;
  /** Deliveries in a row that used up their retry schedule. */
  consecutiveFailures: number;
  /** Why it was disabled; null while enabled. */
  disabledReason: string | null;
}

/** What the admin sets on a trigger's callback. */
export interface CallbackInput {
  url: string;
  /** Events to send besides `invocation.completed` (always sent). @default ['invocation.completed'] */
  events?: string[];
}

/** One delivery in a trigger's (or a run's) delivery log. */
export interface DeliveryView {
  id: string;
  invocationId: string;
  event: CallbackEvent;
  /** Attempts made so far. */
  attempts: number;
  status: DeliveryStatus;
  /** The receiver's status code at the last attempt; null when it did not answer (or no attempt yet). */
  responseStatus: number | null;
  lastAttemptAt: Date | null;
  /** When the next attempt is due; null once delivered or failed for good. */
  nextAttemptAt: Date | null;
  /** The last attempt's duration. */
  latencyMs: number | null;
  /** What went wrong at the last attempt. */
  error: string | null;
  createdAt: Date;
}

/** Most deliveries a trigger's log lists. */
export const DELIVERIES_LISTED = 100;

export interface CreateTriggerInput {
  name: string;
  /** Only `webhook` exists. @default 'webhook' */
  type?: string;
}

/** An account's balance as the admin reads and sets it. */
export interface AccountCredits {
  id: string;
  credits: number;
}

// Signed requests (AdminSigning)

/** Where a secret is: verifying requests; still verifying until its grace ends (`expiresAt`); no longer. */
export type SigningSecretStatus = 'active' | 'expiring' | 'expired' | 'revoked';

/** A signing secret as the admin lists it: never the secret itself. */
export interface SigningSecretView {
  id: string;
  status: SigningSecretStatus;
  createdAt: Date;
  /** When a rotation's grace ends it (null while it is current). */
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** A trigger's signed-request setting and its secrets, newest first (at most `SIGNING_SECRETS_LISTED`). */
export interface RequestSigningView {
  mode: RequestSigning;
  secrets: SigningSecretView[];
}

/** The answer of a rotation: the new secret, shown this once, and the trigger's setting after it. */
export interface RotatedSigningSecret {
  id: string;
  /** `whsec_…`: give it to the sender now; it is never shown again. */
  secret: string;
  signing: RequestSigningView;
}

/** The Overview's windows: the last hour by minute, the last day by half hour (docs/admin.md "Overview"). */
export const OVERVIEW_WINDOWS = {
  hour: { spanMs: 60 * 60_000, bucketMs: 60_000 },
  day: { spanMs: 24 * 60 * 60_000, bucketMs: 30 * 60_000 },
} as const;
export type OverviewWindow = keyof typeof OVERVIEW_WINDOWS;

/** p50 and p95 in milliseconds, by nearest rank (the `⌈p·n/100⌉`-th smallest value). */
export type PercentilesView = Percentiles;

/** One bucket of the Overview: `[start, start + bucketMs)`. */
export interface OverviewBucketView {
  start: Date;
  /** Runs that finished in the bucket, by final status. */
  finished: Record<FinishedStatus, number>;
  /** Duration (started → finished) of the runs finished in the bucket; null when none had started. */
  durationMs: PercentilesView | null;
  /** Queue wait (created → started) of the runs started in the bucket; null when none. */
  queueWaitMs: PercentilesView | null;
}

/** The admin's Overview of every node's runs, from the database: one window, cut in buckets, and the state now. */
export interface OverviewView {
  window: OverviewWindow;
  /** `[from, to)`: `to` is the end of the bucket holding now. */
  from: Date;
  to: Date;
  bucketMs: number;
  buckets: OverviewBucketView[];
  /** Runs finished in the window, by final status (the buckets' sums). */
  finished: OverviewBucketView['finished'];
  durationMs: PercentilesView | null;
  queueWaitMs: PercentilesView | null;
  /** Runs queued and running now. */
  backlog: { queued: number; running: number };
  /** Deliveries failed for good in the window, waiting for a retry now, and callbacks disabled now. */
  callbacks: { failedDeliveries: number; retryingDeliveries: number; disabledCallbacks: number };
}
