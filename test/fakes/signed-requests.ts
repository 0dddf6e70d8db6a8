import { SecretsAtRest } from '../../src/keys/secrets-at-rest.js';
import { SignedRequests } from '../../src/http/signed-requests.js';
import { resolveWebhookTriggerOptions } from '../../src/options/resolve-options.js';
import { InMemoryWebhookStorage } from '../../src/persistence/memory/in-memory-webhook-storage.js';
import type { RateLimitStorage } from '../../src/rate-limits/rate-limit.storage.js';
import { type Clock, SYSTEM_CLOCK } from '../../src/time/clock.js';

/**
 * The signed-request checks `TriggerKeyGuard` needs, on an in-memory storage: for guard specs whose triggers
 * do not sign (the checks then answer "X-Key, counted now" without reading anything).
 */
export function signedRequestsOn(
  limits: RateLimitStorage,
  storage = new InMemoryWebhookStorage(),
  clock: Clock = SYSTEM_CLOCK,
): SignedRequests {
  return new SignedRequests(storage.signing, new SecretsAtRest(resolveWebhookTriggerOptions().keySecret), limits, clock);
}
