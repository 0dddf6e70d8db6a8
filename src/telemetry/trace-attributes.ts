/**
 * The names of the attributes on the module's spans (docs/observability.md, Traces), stable across releases:
 * dashboards and queries are written against them. Ids, counts and outcomes only: never a key, an input, an
 * output or a bot's own error message.
 */
export const TRACE_ATTRIBUTES = {
  triggerId: 'webhook.trigger.id',
  invocationId: 'webhook.invocation.id',
  botId: 'webhook.bot.id',
  accountId: 'webhook.account.id',
  /** Credits charged: by the trigger request (0 for an idempotent repeat), or the run's price on the run's span. */
  credits: 'webhook.credits',
  /** The run's status when the span ended (`succeeded`, `failed`, `timed_out`, `cancelled`, …). */
  runStatus: 'webhook.run.status',
  /** The run's error code when it ended without success (`timeout`, `cancelled`, `interrupted`, …). */
  runErrorCode: 'webhook.run.error_code',
  /** Which start of the run this is (1, then more for a `retryInterrupted` run that lost its process). */
  runAttempt: 'webhook.run.attempt',
  /** True when the trigger request repeated an idempotency key and was answered with the earlier run. */
  replayed: 'webhook.trigger.replayed',
  /** How a sync wait ended: `finished`, `timeout`, `shutdown`, `not-found`, `aborted`. */
  syncOutcome: 'webhook.sync.outcome',
  callbackEvent: 'webhook.callback.event',
  deliveryId: 'webhook.delivery.id',
  /** Which attempt of the delivery this is, from 1. */
  deliveryAttempt: 'webhook.delivery.attempt',
  /** `delivered`, `failed`, `gone` or `refused` (CallbackOutcome). */
  deliveryOutcome: 'webhook.delivery.outcome',
  /** The OpenTelemetry semantic conventions' name for an HTTP status code (the answer's, or the receiver's). */
  httpStatusCode: 'http.response.status_code',
} as const;

/** The spans' names; a run's span adds its bot id, a delivery's its event. */
export const SPAN_NAMES = {
  trigger: 'webhook trigger',
  sync: 'webhook sync',
  status: 'webhook status',
  cancel: 'webhook cancel',
  syncWait: 'webhook sync wait',
  run: 'webhook run',
  callback: 'webhook callback',
} as const;
