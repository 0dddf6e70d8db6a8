/** Injection token of the resolved options (internal; hosts use `@InjectWebhookTriggerOptions()`). */
export const RESOLVED_OPTIONS = Symbol('WEBHOOK_TRIGGER_RESOLVED_OPTIONS');
/** Injection token of the TypeORM DataSource the module uses. */
export const WEBHOOK_DATA_SOURCE = Symbol('WEBHOOK_TRIGGER_DATA_SOURCE');
/** Metadata key set by `@WebhookBot()`. */
export const WEBHOOK_BOT_METADATA = 'webhook-trigger:bot';

/** Path segments of the public API; the spec fixes them. */
export const WEBHOOKS_PATH = 'webhooks';
/**
 * Matches the trigger route with any global prefix, for the body reader that runs before routing.
 * Case-insensitive because Express routes case-insensitively by default: a request it routes here must
 * have had its body captured.
 */
export const TRIGGER_ROUTE_PATTERN = /\/webhooks\/[^/?#]+\/trigger\/?(?:\?.*)?$/i;
/** The cancel route: it takes no body, so whatever a client sends is drained unread, never judged by the host parser. */
export const CANCEL_ROUTE_PATTERN = /\/webhooks\/[^/?#]+\/trigger\/invocation\/[^/?#]+\/cancel\/?(?:\?.*)?$/i;

export const TRIGGER_ID_PATTERN = /^trg_[A-Za-z0-9_-]{16}$/;
export const INVOCATION_ID_PATTERN = /^inv_[A-Za-z0-9_-]{22}$/;
export const KEY_PREFIX = 'whk_';

/** Event names emitted through @nestjs/event-emitter. */
export const WEBHOOK_EVENTS = {
  queued: 'webhook-trigger.invocation.queued',
  started: 'webhook-trigger.invocation.started',
  succeeded: 'webhook-trigger.invocation.succeeded',
  failed: 'webhook-trigger.invocation.failed',
  cancelled: 'webhook-trigger.invocation.cancelled',
  timed_out: 'webhook-trigger.invocation.timed_out',
} as const;
