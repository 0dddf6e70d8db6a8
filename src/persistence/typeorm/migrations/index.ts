import { WebhookTriggersInitial1763800000000 } from './1763800000000-webhook-triggers-initial.js';

/** Add these to your DataSource's `migrations` when you pass `dataSourceName`. */
export const WEBHOOK_TRIGGER_MIGRATIONS = [WebhookTriggersInitial1763800000000];
