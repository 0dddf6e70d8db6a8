import { compileTestingModule } from './nest-testing.js';
import { WebhookTriggerHarness } from './webhook-trigger-harness.js';
import { type WebhookTriggerTestingOptions, WebhookTriggerTestingModule } from './webhook-trigger-testing.module.js';

/**
 * Starts the module for a spec that has no app of its own: the testing module (in memory, on a `TestClock`,
 * callbacks captured) in an app on a free loopback port, and its harness. `await harness.close()` after the spec.
 */
export async function createWebhookTriggerHarness(config: WebhookTriggerTestingOptions = {}): Promise<WebhookTriggerHarness> {
  const moduleRef = await compileTestingModule(
    { imports: [WebhookTriggerTestingModule.forRoot(config)] },
    [...(config.bots ?? []), ...(config.providers ?? [])],
    'createWebhookTriggerHarness()',
  );
  const app = moduleRef.createNestApplication({ logger: false });
  try {
    await app.init();
    const harness = app.get(WebhookTriggerHarness);
    await harness.attach(app, true);
    return harness;
  } catch (error) {
    // The spec never gets the harness to close: what started meanwhile (your providers' pools, timers) would
    // keep the runner alive.
    await app.close().catch(() => undefined);
    throw error;
  }
}
