// Fakes for unit tests: a bot runner that records, HTTP contexts, and the module's parts on an
// InMemoryWebhookStorage (whose contract suites, shared with the SQL storage, are in test/contracts/).
export { RecordingBotRunner } from './recording-bot.runner.js';
export { httpContext, expressRequest, fastifyRequest } from './http-context.js';
export { createWebhookFakes, deferred, type WebhookFakes, type RecordedEvent, type BotMain } from './webhook-fakes.js';
export { triggerKeyRecord } from './trigger-keys.js';
