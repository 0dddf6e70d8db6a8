import { RequestMethod } from '@nestjs/common';
import { WebhookTriggerController } from './webhook-trigger.controller.js';
import { pathOf, WEBHOOK_ROUTE_METHODS, WEBHOOK_ROUTES, webhookRequests } from './webhook-routes.js';

const webhookRequestOf = webhookRequests();
const readsOwnBody = (method: string, url: string) => webhookRequestOf(method, url)?.readsOwnBody ?? false;
const undecodableId = (url: string) => webhookRequestOf('GET', url)?.undecodableId;

describe('webhook routes', () => {
  it.each([
    ['POST', '/webhooks/trg_AAAAAAAAAAAAAAAA/trigger', true],
    ['POST', '/webhooks/trg_AAAAAAAAAAAAAAAA/trigger?x=1', true],
    ['POST', '/WEBHOOKS/trg_AAAAAAAAAAAAAAAA/TRIGGER', true], // Express routes case-insensitively
    ['POST', '/webhooks/trg_AAAAAAAAAAAAAAAA/trigger/invocation/inv_x/cancel', true],
    ['GET', '/webhooks/trg_AAAAAAAAAAAAAAAA/trigger', false],
    ['POST', '/webhooks/trg_AAAAAAAAAAAAAAAA/trigger/invocation/inv_x/sync', false],
    // The pattern once matched inside the query string, so this host route skipped the host's body parser.
    ['POST', '/admin/api/bots/echo/triggers?/webhooks/x/trigger', false],
    ['POST', '/admin/api/bots/echo/triggers#/webhooks/x/trigger', false],
    ['POST', '/webhooks/a/b/trigger', false],
    // A host's own route whose path only ends like the trigger's (once its body was taken).
    ['POST', '/partners/webhooks/acme/trigger', false],
    ['POST', '/api/v1/webhooks/trg_AAAAAAAAAAAAAAAA/trigger', false], // no global prefix here
  ])('%s %s reads its own body: %s', (method, url, expected) => {
    expect(readsOwnBody(method, url)).toBe(expected);
  });

  it('takes the path of a URL (before ? or #)', () => {
    expect(pathOf('/a/b?c=/d#e')).toBe('/a/b');
    expect(pathOf('/a/b#e?x')).toBe('/a/b');
    expect(pathOf('/a/b')).toBe('/a/b');
  });

  it('finds an undecodable id on any webhook route, and nothing elsewhere', () => {
    expect(undecodableId('/webhooks/%zz/trigger')).toEqual({ kind: 'trigger', id: '%zz' });
    expect(undecodableId('/webhooks/abc%/trigger/invocation/inv_x/sync')).toEqual({ kind: 'trigger', id: 'abc%' });
    expect(undecodableId('/webhooks/trg_AAAAAAAAAAAAAAAA/trigger/invocation/%E0%A4%A/sync')).toEqual({
      kind: 'invocation',
      id: '%E0%A4%A',
    });
    expect(undecodableId('/webhooks/%41/trigger')).toBeUndefined(); // valid encoding: left to the route (404 there)
    expect(undecodableId('/other/%zz')).toBeUndefined();
    expect(undecodableId('/webhooks/trg_x/trigger?q=%zz')).toBeUndefined(); // the query is not ours
  });

  it("judges a webhook path with another method as the module's: its undecodable id answered 404, else 405 with Allow", () => {
    expect(webhookRequestOf('PUT', '/webhooks/%zz/trigger')).toEqual({
      operation: 'trigger',
      readsOwnBody: false,
      ignoresBody: false,
      allow: 'POST',
      undecodableId: { kind: 'trigger', id: '%zz' },
    });
    expect(webhookRequestOf('POST', '/webhooks/trg_A/trigger/invocation/inv_x')).toEqual({
      operation: 'status',
      readsOwnBody: false,
      ignoresBody: false,
      allow: 'GET, HEAD',
      undecodableId: undefined,
    });
    expect(webhookRequestOf('HEAD', '/webhooks/trg_A/trigger/invocation/inv_x')?.allow).toBeUndefined(); // served with GET
    expect(webhookRequestOf('OPTIONS', '/webhooks/trg_A/trigger')?.allow).toBeUndefined(); // the host's (CORS)
  });

  it('keeps the body of a GET route from the host, whatever it sends: never read', () => {
    for (const method of ['GET', 'HEAD'])
      for (const route of ['', '/sync', '/events'])
        expect(webhookRequestOf(method, `/webhooks/trg_A/trigger/invocation/inv_x${route}`)).toMatchObject({
          readsOwnBody: false,
          ignoresBody: true,
          allow: undefined,
        });
  });
});

describe('webhook routes under a global prefix', () => {
  const under = (prefix: string, excluded: (path: string, method: string) => boolean = () => false) =>
    webhookRequests((path, method) => (excluded(path, method) ? '' : prefix));

  it.each([
    ['api', '/api/webhooks/trg_A/trigger', true],
    ['/api/v1/', '/api/v1/webhooks/trg_A/trigger', true],
    ['api', '/API/Webhooks/trg_A/trigger', true],
    ['api', '/webhooks/trg_A/trigger', false], // not where the host serves it
    ['api', '/api/partners/webhooks/trg_A/trigger', false], // a host route of its own
    ['api', '/partners/api/webhooks/trg_A/trigger', false],
    ['a.i', '/abi/webhooks/trg_A/trigger', false], // the prefix is text, not a pattern
  ])("prefix '%s': POST %s is the module's trigger: %s", (prefix, url, expected) => {
    expect(under(prefix)('POST', url)?.readsOwnBody ?? false).toBe(expected);
  });

  it('matches a route the prefix excludes at the root, judged per route and method', () => {
    const excluded = (path: string, method: string) => method === 'POST' && path === '/webhooks/:triggerId/trigger';
    const requestOf = under('api', excluded);
    expect(requestOf('POST', '/webhooks/trg_A/trigger')?.operation).toBe('trigger');
    expect(requestOf('POST', '/api/webhooks/trg_A/trigger')).toBeUndefined();
    expect(requestOf('GET', '/api/webhooks/trg_A/trigger/invocation/inv_x/sync')?.operation).toBe('sync');
    expect(requestOf('GET', '/webhooks/trg_A/trigger/invocation/inv_x/sync')).toBeUndefined();
  });

  it("takes a parameter of the prefix (api/:tenant) as any segment, keeping the route's own ids in their places", () => {
    const requestOf = under('api/:tenant');
    expect(requestOf('POST', '/api/acme/webhooks/trg_A/trigger')?.readsOwnBody).toBe(true);
    expect(requestOf('POST', '/api/acme/webhooks/%zz/trigger')?.undecodableId).toEqual({ kind: 'trigger', id: '%zz' });
    expect(requestOf('GET', '/api/%zz/webhooks/trg_A/trigger/invocation/inv_x')?.undecodableId).toBeUndefined();
  });
});

describe('webhook operations', () => {
  it.each([
    ['POST', '/webhooks/trg_A/trigger', 'trigger'],
    ['POST', '/webhooks/trg_A/trigger?x=/sync', 'trigger'],
    ['GET', '/webhooks/trg_A/trigger/invocation/inv_x', 'status'],
    ['GET', '/webhooks/trg_A/trigger/invocation/inv_x/sync?timeout=3', 'sync'],
    ['POST', '/webhooks/trg_A/trigger/invocation/inv_x/cancel', 'cancel'],
    ['GET', '/webhooks/trg_A/trigger/invocation/inv_x/events', 'events'],
    ['GET', '/webhooks/trg_A/trigger', 'trigger'], // the module's 405, an answer of the trigger's path
    ['HEAD', '/webhooks/trg_A/trigger/invocation/inv_x/sync', 'sync'], // served as its GET
    ['OPTIONS', '/webhooks/trg_A/trigger', undefined], // the host's (a CORS preflight)
    ['GET', '/admin/api/triggers', undefined],
  ])('%s %s is %s', (method, url, operation) => {
    expect(webhookRequestOf(method, url)?.operation).toBe(operation);
  });
});

describe('the route table and the controller', () => {
  it('the controller serves each route of the table with the method the table names (what the body capture and the URLs read)', () => {
    // Nest's route metadata, as its @Get()/@Post() write it ('path' and 'method': PATH_METADATA, METHOD_METADATA).
    const declared = Object.getOwnPropertyNames(WebhookTriggerController.prototype)
      .filter((name) => name !== 'constructor')
      .map((name) => (WebhookTriggerController.prototype as unknown as Record<string, unknown>)[name])
      .filter((handler): handler is object => typeof handler === 'function' && Reflect.hasMetadata('path', handler))
      .map((handler) => [Reflect.getMetadata('path', handler) as string, RequestMethod[Reflect.getMetadata('method', handler) as number]]);
    const table = Object.entries(WEBHOOK_ROUTES).map(([operation, path]) => [
      path,
      WEBHOOK_ROUTE_METHODS[operation as keyof typeof WEBHOOK_ROUTES],
    ]);
    expect(declared.sort()).toEqual(table.sort());
  });
});
