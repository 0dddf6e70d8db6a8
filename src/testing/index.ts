// `nestjs-webhook-triggers/testing`: the testing kit (docs/testing.md). A separate entry, loaded only by tests:
// the main entry never imports it. Needs `@nestjs/testing` (as every Nest app's tests do).
export {
  WebhookTriggerTestingModule,
  type WebhookTriggerTestingAsyncOptions,
  type WebhookTriggerTestingModuleOptions,
  type WebhookTriggerTestingOptions,
} from './webhook-trigger-testing.module.js';
export {
  WebhookTriggerHarness,
  TestRun,
  type TestAnswer,
  type TestAnswerBody,
  type TestCallbackInvocation,
  type TestCallback,
  type TestRunEvent,
  type TestTrigger,
} from './webhook-trigger-harness.js';
export { createWebhookTriggerHarness } from './create-harness.js';
export { TestClock } from './test-clock.js';
export { CapturingCallbackTransport, type CapturedCallback } from './capturing-callback.transport.js';
export { runBot, type RunBotOptions, type RunBotResult } from './run-bot.js';
