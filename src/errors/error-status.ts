import {
  BacklogFullError,
  BodyTimeoutError,
  BotNotRegisteredError,
  DatabaseConnectionLostError,
  IdempotencyKeyReusedError,
  InvalidKeyError,
  SignedRequestRefusedError,
  InvalidRequestError,
  InvocationAlreadyFinishedError,
  IpNotAllowedError,
  MethodNotAllowedError,
  NotEnoughCreditsError,
  PayloadTooLargeError,
  RateLimitedError,
  ShuttingDownError,
  SyncTimeoutError,
  ProcessFullError,
  ShareHeldError,
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
  [SignedRequestRefusedError, 401],
  [WebhookAdminForbiddenError, 403],
  [IpNotAllowedError, 403],
  [NotEnoughCreditsError, 402],
  [UnknownTriggerError, 404],
  [UnknownInvocationError, 404],
  [BotNotRegisteredError, 404],
  [MethodNotAllowedError, 405],
  [WebhookAdminNotFoundError, 404],
  [SyncTimeoutError, 408],
  [BodyTimeoutError, 408],
  [InvocationAlreadyFinishedError, 409],
  [WebhookAdminConflictError, 409],
  [PayloadTooLargeError, 413],
  [UnsupportedMediaTypeError, 415],
  [IdempotencyKeyReusedError, 422],
  [RateLimitedError, 429],
  [ShareHeldError, 429],
  [ShuttingDownError, 503],
  [BacklogFullError, 503],
  [WebhookAdminUnavailableError, 503],
  [ProcessFullError, 503],
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
