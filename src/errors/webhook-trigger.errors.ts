import {
  ACCOUNT_NOT_FUNDED,
  ALREADY_FINISHED,
  BACKLOG_FULL,
  BOT_NOT_REGISTERED,
  BODY_NOT_JSON_TYPE,
  BODY_TIMEOUT,
  CLIENT_GONE,
  BODY_TOO_LARGE,
  DATABASE_UNAVAILABLE,
  IDEMPOTENCY_KEY_REUSED,
  IDEMPOTENCY_KEY_TAKEN,
  INVALID_KEY,
  IP_NOT_ALLOWED,
  METHOD_NOT_ALLOWED,
  MISSING_KEY,
  NOT_ENOUGH_CREDITS,
  RATE_LIMITED,
  SHUTTING_DOWN,
  SYNC_SHUTDOWN,
  SYNC_TIMEOUT,
  UNKNOWN_INVOCATION,
  UNKNOWN_TRIGGER,
} from './webhook-trigger.messages.js';

/**
 * Base of every error the module throws on purpose. Its message is the text the caller (or the host,
 * for startup errors) sees; `error-status.ts` maps each class to its HTTP status.
 */
export class WebhookTriggerError extends Error {
  override name = this.constructor.name;
}

/** A bad option, extra or bot declaration: stops bootstrap, naming the field and the fix. */
export class WebhookConfigurationError extends WebhookTriggerError {}

/** Invalid input to the admin service (an unknown bot, a bad name or credit amount). */
export class WebhookAdminInputError extends WebhookTriggerError {}

/** Something the admin was asked about does not exist (404): a bot, trigger, run, account or asset. */
export class WebhookAdminNotFoundError extends WebhookTriggerError {}

/** An admin change refused (403): read-only mode, or a cross-site request. */
export class WebhookAdminForbiddenError extends WebhookTriggerError {}

/** The admin cannot serve this now (503): too many live streams on this node. */
export class WebhookAdminUnavailableError extends WebhookTriggerError {}

/** An admin change that conflicts with the current state (409), e.g. replaying a run of a deleted trigger. */
export class WebhookAdminConflictError extends WebhookTriggerError {}

/** A request the webhook API refuses as malformed (400). */
export class InvalidRequestError extends WebhookTriggerError {}

/** The trigger has an IP allow-list and the request's address (as the host trusts it) is not on it (403). */
export class IpNotAllowedError extends WebhookTriggerError {
  constructor(ip: string) {
    super(IP_NOT_ALLOWED(ip.slice(0, 64)));
  }
}

export class UnknownTriggerError extends WebhookTriggerError {
  constructor(triggerId: string) {
    super(UNKNOWN_TRIGGER(String(triggerId).slice(0, 64)));
  }
}

export class UnknownInvocationError extends WebhookTriggerError {
  constructor(invocationId: string) {
    super(UNKNOWN_INVOCATION(String(invocationId).slice(0, 64)));
  }
}

/** 405: a webhook path called with a method it is not served with (`allowed`, the `Allow` header). */
export class MethodNotAllowedError extends WebhookTriggerError {
  constructor(
    method: string,
    readonly allowed: string,
  ) {
    super(METHOD_NOT_ALLOWED(method.slice(0, 16), allowed));
  }
}

export class InvalidKeyError extends WebhookTriggerError {
  constructor(readonly missing: boolean) {
    super(missing ? MISSING_KEY : INVALID_KEY);
  }
}

/** 401: a trigger that asks for signed requests got one that failed a check (the message says which). */
export class SignedRequestRefusedError extends WebhookTriggerError {}

/** 429, with the seconds to wait (the `Retry-After` header). */
export class RateLimitedError extends WebhookTriggerError {
  constructor(
    scope: 'trigger' | 'account' | 'client',
    readonly retryAfterSeconds: number,
    message = RATE_LIMITED(scope),
  ) {
    super(message);
  }
}

export class PayloadTooLargeError extends WebhookTriggerError {
  constructor(limit: number) {
    super(BODY_TOO_LARGE(limit));
  }
}

/** 408: the body did not arrive in time (`bodyTimeoutMs`); the connection is closed with the answer. */
export class BodyTimeoutError extends WebhookTriggerError {
  constructor(timeoutMs: number) {
    super(BODY_TIMEOUT(timeoutMs));
  }
}

/** The client went away before its request was read: nobody to answer, and not an error of ours. */
export class ClientGoneError extends WebhookTriggerError {
  constructor() {
    super(CLIENT_GONE);
  }
}

export class UnsupportedMediaTypeError extends WebhookTriggerError {
  constructor(contentType: string | undefined) {
    super(BODY_NOT_JSON_TYPE(contentType));
  }
}

/** 402: the account cannot pay for the run (or was never opened: `funded` false). */
export class NotEnoughCreditsError extends WebhookTriggerError {
  constructor(
    readonly accountId: string,
    readonly cost: number,
    readonly funded = true,
  ) {
    super(funded ? NOT_ENOUGH_CREDITS(cost) : ACCOUNT_NOT_FUNDED(cost));
  }
}

export class BotNotRegisteredError extends WebhookTriggerError {
  constructor(readonly botId: string) {
    super(BOT_NOT_REGISTERED(botId));
  }
}

/** The idempotency key was already used on this trigger for a request with a different body. */
export class IdempotencyKeyReusedError extends WebhookTriggerError {
  constructor() {
    super(IDEMPOTENCY_KEY_REUSED);
  }
}

/**
 * Thrown by `InvocationRepository.insert` when (triggerId, idempotencyKey) is already taken: a
 * concurrent request with the same key committed first. The service answers with that run instead.
 */
export class IdempotencyKeyTakenError extends WebhookTriggerError {
  constructor(
    readonly triggerId: string,
    readonly idempotencyKey: string,
  ) {
    super(IDEMPOTENCY_KEY_TAKEN(triggerId));
  }
}

/** The run already finished, so it cannot be cancelled. */
export class InvocationAlreadyFinishedError extends WebhookTriggerError {
  constructor(
    readonly invocationId: string,
    readonly status: string,
  ) {
    super(ALREADY_FINISHED(invocationId, status));
  }
}

/** 408 from sync: the run did not finish within the wait (or the process began shutting down). */
export class SyncTimeoutError extends WebhookTriggerError {
  constructor(
    readonly invocationStatus: string,
    waited: { waitMs: number } | 'shutdown',
  ) {
    super(waited === 'shutdown' ? SYNC_SHUTDOWN(invocationStatus) : SYNC_TIMEOUT(waited.waitMs, invocationStatus));
  }
}

/**
 * 503 with Retry-After: this process already holds all it may of something requests hold for as long as they last
 * (`maxEventStreams` run event streams, `maxSyncWaiters` waiting syncs): another node may have room.
 */
export class ProcessFullError extends WebhookTriggerError {
  readonly retryAfterSeconds = 1;
}

/**
 * 429 with Retry-After: the trigger (or its account) already holds its share of it (`maxEventStreamsPerTrigger`,
 * `maxSyncWaitersPerAccount`…); the others' are unaffected.
 */
export class ShareHeldError extends WebhookTriggerError {
  /** A stream or a wait lasts as long as its run: a few seconds is the least worth waiting. */
  readonly retryAfterSeconds = 5;
}

/**
 * 503 with Retry-After: the database went away under the request (a terminated backend, a restarted server);
 * any transaction was rolled back. Thrown by the module's SQL storage; a host's storage may throw it too.
 * `cause` is what the driver reported.
 */
export class DatabaseConnectionLostError extends WebhookTriggerError {
  readonly retryAfterSeconds = 1;
  constructor(cause: unknown) {
    super(DATABASE_UNAVAILABLE, { cause });
  }
}

/** The application is shutting down and accepts no new runs. */
export class ShuttingDownError extends WebhookTriggerError {
  readonly retryAfterSeconds = 1;
  constructor() {
    super(SHUTTING_DOWN);
  }
}

/**
 * 503: `maxQueuedRuns` runs are already accepted and waiting to start (in this process, or on the run queue);
 * refused before anything is stored or charged.
 */
export class BacklogFullError extends WebhookTriggerError {
  readonly retryAfterSeconds = 1;
  constructor(readonly maxQueuedRuns: number) {
    super(BACKLOG_FULL(maxQueuedRuns));
  }
}

/** Why a received webhook was refused (`WebhookVerificationError.reason`). */
export type WebhookVerificationFailure =
  'missing_headers' | 'bad_headers' | 'timestamp_too_old' | 'timestamp_too_new' | 'no_matching_signature' | 'body_not_json';

/**
 * A received webhook failed verification (`verifyWebhookSignature`): do not act on it. Not an HTTP error:
 * the receiver decides the answer (`WebhookSignatureGuard` answers 401).
 */
export class WebhookVerificationError extends WebhookTriggerError {
  constructor(
    readonly reason: WebhookVerificationFailure,
    message: string,
  ) {
    super(message);
  }
}
