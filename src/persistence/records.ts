import type { BotOutput } from '../bots/bot.types.js';

/**
 * Where a run is in its life: `queued → running → succeeded | failed | cancelled | timed_out`, and
 * `queued → cancelled`. Terminal states never change.
 */
export const INVOCATION_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out'] as const;
export type InvocationStatus = (typeof INVOCATION_STATUSES)[number];
/** The states a run never leaves. */
export const TERMINAL_STATUSES: ReadonlySet<InvocationStatus> = new Set(
  INVOCATION_STATUSES.filter((s) => s !== 'queued' && s !== 'running'),
);

export interface TriggerRecord {
  id: string;
  botId: string;
  /** The account charged for runs started through this trigger. */
  accountId: string;
  name: string;
  type: 'webhook';
  /**
   * Its keys that were not revoked, oldest first (created, then id). Some may have expired: expiry is judged
   * where a key is checked, against the module's `Clock`, so a grace period ends with no write.
   */
  keys: TriggerKeyRecord[];
  createdAt: Date;
  /** Whether trigger requests must be signed (Standard Webhooks); `off` when absent. See `RequestSigning`. */
  requestSigning?: RequestSigning;
  /**
   * The addresses and CIDRs (IPv4, IPv6) a request must come from; absent or empty lets every address in.
   * Set with `TriggerRepository.setAllowedIps` (the admin checks each entry first); stores leave it out when empty.
   */
  allowedIps?: string[];
}

/** One key of a trigger (`webhook_trigger_keys`): any usable one opens the trigger. */
export interface TriggerKeyRecord {
  /** `key_` + 16 base64url characters. */
  id: string;
  triggerId: string;
  /** Shown in the screens, e.g. "Key 1" or "CI deploys". */
  label: string;
  /** SHA-256 of the key, hex. */
  keyHash: string;
  /** AES-256-GCM ciphertext of the key when the host configured `keySecret`. */
  keyCiphertext: string | null;
  createdAt: Date;
  /** From then on the key is refused; null: until revoked. */
  expiresAt: Date | null;
  /** When a rotation set (shortened) `expiresAt`: the key is in its grace period until then. Null otherwise. */
  rotatedAt: Date | null;
  /** Null while the key works (a revoked key is never part of a `TriggerRecord`). */
  revokedAt: Date | null;
  /** Last accepted request with it, written at most once a minute per process; null when never used. */
  lastUsedAt: Date | null;
}

/**
 * A trigger's signed-request setting: `off` (X-Key only, the default); `with-key` (X-Key AND a valid
 * Standard Webhooks signature); `instead-of-key` (a valid signature is enough, X-Key is not asked).
 */
export const REQUEST_SIGNING_MODES = ['off', 'with-key', 'instead-of-key'] as const;
export type RequestSigning = (typeof REQUEST_SIGNING_MODES)[number];

/** One signing secret of a trigger (several at once while a sender rotates). */
export interface SigningSecretRecord {
  id: string;
  triggerId: string;
  /** The `whsec_…` secret, or its AES-256-GCM ciphertext when the host set `keySecret` (as callback secrets). */
  secret: string;
  createdAt: Date;
  /** When a rotation ends its grace; null while it is the newest (or never rotated out). */
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export interface InvocationError {
  message: string;
  /** Why the run ended without success, when it was not the bot's own error: `timeout`, `cancelled`, `interrupted`, `interrupted_too_often`, `invalid_outputs`, `outputs_too_large`, `bot_not_registered`. */
  code?: string;
}

export interface InvocationRecord {
  id: string;
  triggerId: string;
  botId: string;
  accountId: string;
  status: InvocationStatus;
  inputs: Record<string, unknown>;
  outputs: BotOutput[] | null;
  error: InvocationError | null;
  /** Credits charged when the run was accepted. */
  credits: number;
  idempotencyKey: string | null;
  /** SHA-256 of the request body, to tell a repeat from a different request under the same idempotency key. */
  requestHash: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** The process that claimed it (`InvocationExecutor.owner`), while it is `running`. */
  owner?: string | null;
  /**
   * How many times the run was claimed (`markRunning`): 1 after its first start, one more each time an
   * interrupted `retryInterrupted` run starts again. Bounds those restarts (`maxRunAttempts`); a store
   * that leaves it undefined gets no bound.
   */
  attempts?: number;
  /**
   * The trigger request's trace context, as the host's OpenTelemetry propagator wrote it (JSON of its fields,
   * e.g. `{"traceparent":"00-…"}`): the run and its callbacks continue that trace in whichever process runs
   * them. Null (or undefined in a store that does not keep it) when the host records no traces.
   */
  traceContext?: string | null;
  /** Set by history lists when the outputs were too long to list (they are `null` there; read the run by id). */
  outputsTruncated?: boolean;
  /** Set by history lists when the inputs were too long to list (they are `{}` there; read the run by id). */
  inputsTruncated?: boolean;
  /** Set by history lists when the error was too long to list (it is `null` there; read the run by id). */
  errorTruncated?: boolean;
}

/**
 * A claim made by the accept step itself (accept-as-running): the run is stored `running`, owned by the
 * process that will run it at once, with its lease and its first attempt counted, as `markRunning` would.
 */
export interface AcceptClaim {
  owner: string;
  startedAt: Date;
  leaseExpiresAt: Date;
}

/** A run to store: `queued`, or `running` when its accept step claimed it (`claim`). */
export type NewInvocation = Omit<InvocationRecord, 'status' | 'outputs' | 'error' | 'startedAt' | 'finishedAt' | 'owner' | 'attempts'> & {
  claim?: AcceptClaim;
  /**
   * Runs were waiting for a slot in this process when this one was accepted (`BotRunner.behind()`): the node is
   * behind on its runs, and its accept step lets the node's claims in flight go first. Not stored.
   */
  runsWaiting?: boolean;
};

/**
 * The run as its accept step stores it: `running` when the accept claimed it (owned and started by the claim's
 * process, its first attempt counted), else `queued`. Written field by field on purpose: on Node 20 a literal
 * that adds properties after a spread (`{ ...run, status, … }`) costs ~0.7 µs and a new hidden class for each
 * property added, on every call (bench/README.md, "Object spreads").
 */
export function acceptedRecord(run: NewInvocation): InvocationRecord & { owner: string | null; attempts: number } {
  const claim = run.claim;
  return {
    id: run.id,
    triggerId: run.triggerId,
    botId: run.botId,
    accountId: run.accountId,
    inputs: run.inputs,
    credits: run.credits,
    idempotencyKey: run.idempotencyKey,
    requestHash: run.requestHash,
    createdAt: run.createdAt,
    traceContext: run.traceContext ?? null,
    status: claim ? 'running' : 'queued',
    outputs: null,
    error: null,
    startedAt: claim ? claim.startedAt : null,
    finishedAt: null,
    owner: claim ? claim.owner : null,
    attempts: claim ? 1 : 0,
  };
}

/** Fields written together with a state change. */
export interface InvocationTransition {
  startedAt?: Date | null;
  finishedAt?: Date;
  outputs?: BotOutput[] | null;
  error?: InvocationError | null;
}

/** The events a callback may send; `invocation.completed` is always among a callback's events. */
export const CALLBACK_EVENTS = ['invocation.started', 'invocation.output', 'invocation.completed'] as const;
export type CallbackEvent = (typeof CALLBACK_EVENTS)[number];

/** A trigger's callback, as stored. */
export interface CallbackRecord {
  triggerId: string;
  url: string;
  events: CallbackEvent[];
  /** The `whsec_…` secret, or its AES-256-GCM ciphertext when the host set `keySecret`. */
  secret: string;
  enabled: boolean;
  /** Deliveries in a row that used up their retry schedule (reset by a delivered one). */
  consecutiveFailures: number;
  /** Why it was disabled (410 Gone, too many failures); null while enabled. */
  disabledReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Where a delivery is: waiting for its (next) attempt, delivered, or failed for good (schedule used up, callback gone). */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One delivery of one event to a trigger's callback, stored before it is sent. */
export interface DeliveryRecord {
  id: string;
  triggerId: string;
  invocationId: string;
  event: CallbackEvent;
  /** The `webhook-id` header: the same on every attempt. */
  msgId: string;
  /** The JSON body, fixed when the delivery was created. */
  body: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  responseStatus: number | null;
  latencyMs: number | null;
  lastError: string | null;
  createdAt: Date;
  /** The run's trace context (`InvocationRecord.traceContext`), for each attempt's client span and `traceparent`. */
  traceContext?: string | null;
}

/** What an attempt changed, written together with releasing the claim. */
export interface AttemptResult {
  status: DeliveryStatus;
  attemptedAt: Date;
  nextAttemptAt: Date | null;
  responseStatus: number | null;
  latencyMs: number;
  error: string | null;
}
