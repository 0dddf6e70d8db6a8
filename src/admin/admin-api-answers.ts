import { WebhookAdminNotFoundError } from '../errors/webhook-trigger.errors.js';
import type { BotSummary, InvocationView, TriggerListItem, TriggerWithKey } from './admin-views.js';

// How the admin API answers with the service's views, where its JSON differs from them: the one place each
// answer is shaped. Views the API sends as they are (runs in detail, callbacks, deliveries, credits) pass
// through untouched.

/** A bot in `GET api/bots`: its per-run price named for the screens. */
export function botAnswer({ id, name, accountId, credits, accountCredits, triggers, runsLast24h }: BotSummary) {
  return { id, name, accountId, creditsPerRun: credits, accountCredits, triggers, runsLast24h };
}

/** A trigger created or viewed (with its key). */
export function triggerAnswer({ id, name, type, botId, url, key, createdAt }: TriggerWithKey) {
  return { id, name, type, botId, url, key, createdAt };
}

/** A trigger in a bot's list (no key). */
export function listedTriggerAnswer({ id, name, type, url, createdAt, lastUsedAt }: TriggerListItem) {
  return { id, name, type, url, createdAt, lastUsedAt };
}

/** A rotated key. */
export function rotatedKeyAnswer({ id, url, key }: TriggerWithKey) {
  return { id, url, key };
}

/** A run in a bot's history page: the bot is the page's. */
export function listedRunAnswer({ botId: _bot, ...run }: InvocationView) {
  return run;
}

/** A redelivery accepted. */
export function redeliveryAnswer(deliveryId: string) {
  return { id: deliveryId, status: 'pending' as const };
}

/** The value, or a 404 with `message` when the service found nothing. */
export function found<T>(value: T | null, message: string): T {
  if (value === null) throw new WebhookAdminNotFoundError(message);
  return value;
}
