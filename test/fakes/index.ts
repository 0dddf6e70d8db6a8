// In-memory implementations of the module's contracts: fakes for unit tests, and reference
// implementations a host can copy when it writes its own stores. test/fakes/contract.spec.ts runs the same
// checks against them and the SQL stores.
export { RecordingBotRunner } from './recording-bot.runner.js';
export { httpContext, expressRequest, fastifyRequest } from './http-context.js';
export { createWebhookFakes, deferred, type WebhookFakes, type RecordedEvent, type BotMain } from './webhook-fakes.js';
