import { type INestApplication, RequestMethod } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { RESOLVED_OPTIONS } from '../../options/module.constants.js';
import { resolveWebhookTriggerOptions } from '../../options/resolve-options.js';
import type { WebhookTriggerModuleOptions } from '../../options/webhook-trigger-options.interface.js';
import { TriggerUrls } from './trigger-urls.js';

describe('TriggerUrls', () => {
  let app: INestApplication | undefined;
  const built: TestingModule[] = [];
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await Promise.all(built.splice(0).map((moduleRef) => moduleRef.close()));
  });

  /** TriggerUrls as Nest builds it: with the ApplicationConfig and HttpAdapterHost every app has. */
  async function build(options: WebhookTriggerModuleOptions = {}): Promise<TestingModule> {
    const moduleRef = await Test.createTestingModule({
      providers: [TriggerUrls, { provide: RESOLVED_OPTIONS, useValue: resolveWebhookTriggerOptions(options, {}) }],
    }).compile();
    built.push(moduleRef);
    return moduleRef;
  }

  it('falls back to http://localhost:3000 in an app without an HTTP server (an application context)', async () => {
    const urls = (await build()).get(TriggerUrls);
    expect(urls.triggerUrl('trg_AAAAAAAAAAAAAAAA')).toBe('http://localhost:3000/webhooks/trg_AAAAAAAAAAAAAAAA/trigger');
    expect(urls.triggerUrl('trg_AAAAAAAAAAAAAAAA', 'https://viewer.example.org')).toBe(
      'https://viewer.example.org/webhooks/trg_AAAAAAAAAAAAAAAA/trigger',
    );
  });

  it('reads the global prefix set after the providers were built, and the port once the app listens', async () => {
    app = (await build()).createNestApplication({ logger: false });
    const urls = app.get(TriggerUrls);
    app.setGlobalPrefix('/api/v1/');
    expect(urls.triggerUrl('trg_AAAAAAAAAAAAAAAA')).toBe('http://localhost:3000/api/v1/webhooks/trg_AAAAAAAAAAAAAAAA/trigger');
    await app.listen(0, '127.0.0.1');
    const port = new URL(await app.getUrl()).port;
    expect(urls.triggerUrl('trg_AAAAAAAAAAAAAAAA')).toBe(`http://localhost:${port}/api/v1/webhooks/trg_AAAAAAAAAAAAAAAA/trigger`);
  });

  it.each([
    ['a string that covers the trigger route', ['webhooks/*path'], '/webhooks'],
    ['a RouteInfo of the trigger route for POST', [{ path: 'webhooks/:id/trigger', method: RequestMethod.POST }], '/webhooks'],
    ['a RouteInfo of the trigger route for ALL', [{ path: 'webhooks/:triggerId/trigger', method: RequestMethod.ALL }], '/webhooks'],
    [
      'a RouteInfo of the trigger path for GET only (the POST route stays under the prefix)',
      [{ path: 'webhooks/*path', method: RequestMethod.GET }],
      '/api/webhooks',
    ],
    ['a route of the host', ['ping', 'health/*path'], '/api/webhooks'],
    ['one trigger id (Nest judges the declared path, :triggerId, not a URL)', ['webhooks/trg_AAAAAAAAAAAAAAAA/trigger'], '/api/webhooks'],
  ])('leaves out the global prefix only when its exclude covers the trigger route: %s', async (_name, exclude, path) => {
    app = (await build()).createNestApplication({ logger: false });
    app.setGlobalPrefix('api', { exclude });
    expect(app.get(TriggerUrls).triggerUrl('trg_AAAAAAAAAAAAAAAA', 'https://viewer.example.org')).toBe(
      `https://viewer.example.org${path}/trg_AAAAAAAAAAAAAAAA/trigger`,
    );
  });

  it('puts publicBaseUrl before any origin', async () => {
    const urls = (await build({ publicBaseUrl: 'https://hooks.example.com' })).get(TriggerUrls);
    expect(urls.triggerUrl('trg_AAAAAAAAAAAAAAAA', 'https://viewer.example.org')).toBe(
      'https://hooks.example.com/webhooks/trg_AAAAAAAAAAAAAAAA/trigger',
    );
  });
});
