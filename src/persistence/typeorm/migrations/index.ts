import { WebhookTriggersInitial1763800000000 } from './1763800000000-webhook-triggers-initial.js';
import { WebhookTriggersLifecycle1763900000000 } from './1763900000000-webhook-triggers-lifecycle.js';
import { WebhookTriggersHistory1764000000000 } from './1764000000000-webhook-triggers-history.js';
import { WebhookTriggersCallbacks1764100000000 } from './1764100000000-webhook-triggers-callbacks.js';
import { WebhookTriggersRunAttempts1764200000000 } from './1764200000000-webhook-triggers-run-attempts.js';
import { WebhookTriggersKeys1764300000000 } from './1764300000000-webhook-triggers-keys.js';
import { WebhookTriggersSigning1764400000000 } from './1764400000000-webhook-triggers-signing.js';
import { WebhookTriggersAudit1764500000000 } from './1764500000000-webhook-triggers-audit.js';
import { WebhookTriggersTraceContext1764600000000 } from './1764600000000-webhook-triggers-trace-context.js';
import { WebhookTriggersOverview1764700000000 } from './1764700000000-webhook-triggers-overview.js';
import { WebhookTriggersIdempotencyPartial1764800000000 } from './1764800000000-webhook-triggers-idempotency-partial.js';

/** Add these to your DataSource's `migrations` when you pass `dataSourceName`. */
export const WEBHOOK_TRIGGER_MIGRATIONS = [
  WebhookTriggersInitial1763800000000,
  WebhookTriggersLifecycle1763900000000,
  WebhookTriggersHistory1764000000000,
  WebhookTriggersCallbacks1764100000000,
  WebhookTriggersRunAttempts1764200000000,
  WebhookTriggersKeys1764300000000,
  WebhookTriggersSigning1764400000000,
  WebhookTriggersAudit1764500000000,
  WebhookTriggersTraceContext1764600000000,
  WebhookTriggersOverview1764700000000,
  WebhookTriggersIdempotencyPartial1764800000000,
];
