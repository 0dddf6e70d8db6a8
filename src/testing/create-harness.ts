import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { TESTING_PACKAGE_MISSING } from '../errors/webhook-trigger.messages.js';
import { WebhookTriggerHarness } from './webhook-trigger-harness.js';
import { type WebhookTriggerTestingOptions, WebhookTriggerTestingModule } from './webhook-trigger-testing.module.js';

/**
 * Starts the module for a spec that has no app of its own: the testing module (in memory, on a `TestClock`,
 * callbacks captured) in an app on a free loopback port, and its harness. `await harness.close()` after the spec.
 */
export async function createWebhookTriggerHarness(config: WebhookTriggerTestingOptions = {}): Promise<WebhookTriggerHarness> {
  const moduleRef = await nestTesting()
    .Test.createTestingModule({ imports: [WebhookTriggerTestingModule.forRoot(config)] })
    .compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  const harness = app.get(WebhookTriggerHarness);
  await harness.attach(app, true);
  return harness;
}

/**
 * `@nestjs/testing`, loaded when a harness is made (so the kit's other parts, `runBot` and the testing module in
 * your own test module, import without it); missing, the error says to install it.
 */
function nestTesting(): typeof import('@nestjs/testing') {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a dev dependency of the host, needed here only
    return require('@nestjs/testing') as typeof import('@nestjs/testing');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'MODULE_NOT_FOUND') throw new WebhookConfigurationError(TESTING_PACKAGE_MISSING);
    throw error;
  }
}
