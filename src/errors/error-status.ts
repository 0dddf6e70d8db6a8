import {
  BacklogFullError,
  BodyTimeoutError,
  BotNotRegisteredError,
  DatabaseConnectionLostError,
  IdempotencyKeyReusedError,
  InvalidKeyError,
  InvalidRequestError,
  InvocationAlreadyFinishedError,
  NotEnoughCreditsError,
  PayloadTooLargeError,
  RateLimitedError,
  ShuttingDownError,
  SyncTimeoutError,
  TooManyEventStreamsError,
  UnknownInvocationError,
  UnknownTriggerError,
  UnsupportedMediaTypeError,
  WebhookAdminConflictError,
  WebhookAdminForbiddenError,
  WebhookAdminNotFoundError,
  WebhookAdminUnavailableError,
  WebhookAdminInputError,
  type WebhookTriggerError,
} from './webhook-trigger.errors.js';

/** The one table from error class to HTTP status. Errors not listed (and non-errors) are 500s. */
const HTTP_STATUS = new Map<abstract new (...args: never[]) => WebhookTriggerError, number>([
  [InvalidRequestError, 400],
  [WebhookAdminInputError, 400],
  [InvalidKeyError, 401],
  [WebhookAdminForbiddenError, 403],
  [NotEnoughCreditsError, 402],
  [UnknownTriggerError, 404],
  [UnknownInvocationError, 404],
  [BotNotRegisteredError, 404],
  [WebhookAdminNotFoundError, 404],
  [SyncTimeoutError, 408],
  [BodyTimeoutError, 408],
  [InvocationAlreadyFinishedError, 409],
  [WebhookAdminConflictError, 409],
  [PayloadTooLargeError, 413],
  [UnsupportedMediaTypeError, 415],
  [IdempotencyKeyReusedError, 422],
  [RateLimitedError, 429],
  [ShuttingDownError, 503],
  [BacklogFullError, 503],
  [WebhookAdminUnavailableError, 503],
  [TooManyEventStreamsError, 503],
  [DatabaseConnectionLostError, 503],
]);

/** The HTTP status of one of the module's errors, or undefined for anything else. */
export function httpStatusOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  // Walks up the classes, so a subclass (e.g. a host's own) keeps its parent's status.
  for (
    let proto: object | null = Object.getPrototypeOf(error) as object | null;
    proto;
    proto = Object.getPrototypeOf(proto) as object | null
  ) {
    const status = HTTP_STATUS.get(proto.constructor as abstract new (...args: never[]) => WebhookTriggerError);
    if (status !== undefined) return status;
  }
  return undefined;
}

/** Seconds for the `Retry-After` header, for errors that carry one (429, 503). */
export function retryAfterOf(error: unknown): number | undefined {
  const seconds = (error as { retryAfterSeconds?: unknown } | null)?.retryAfterSeconds;
  return typeof seconds === 'number' ? seconds : undefined;
}

/**
 * SQLSTATE classes and codes that mean the database went away under the request, not that it was wrong:
 * 08 (connection exception), 57P01–57P03 (terminated by an administrator, a crash shutdown, cannot connect now).
 */
const DATABASE_GONE_CODE = /^(08...|57P0[123])$/;
/** What node-postgres (and the socket under it) throws when the connection ends or cannot be made. */
const DATABASE_GONE_MESSAGE = /^(Connection terminated|Client has encountered a connection error|connect ECONNREFUSED|read ECONNRESET)/;
const SOCKET_GONE_CODE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE']);

/**
 * True when `error` says the database connection was lost or refused (a server restart, a terminated backend):
 * the request may succeed if retried, so it is answered 503 with Retry-After, not 500. Looks at the error and,
 * for TypeORM's QueryFailedError, its `driverError`.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error as { code?: unknown; message?: unknown; driverError?: unknown } | null, depth = 0; e && depth < 3; depth++) {
    if (typeof e.code === 'string' && (DATABASE_GONE_CODE.test(e.code) || SOCKET_GONE_CODE.has(e.code))) return true;
    if (typeof e.message === 'string' && DATABASE_GONE_MESSAGE.test(e.message)) return true;
    e = typeof e.driverError === 'object' ? e.driverError : null;
  }
  return false;
}
