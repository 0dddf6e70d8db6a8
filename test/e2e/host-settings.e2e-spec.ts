/**
 * The webhook API keeps the spec's paths, status codes and bodies whatever a host sets globally: a global
 * ThrottlerGuard (one throttler or several named ones), URI / header / media-type versioning with a default
 * version, a global prefix with excludes, a strict global ValidationPipe, ClassSerializerInterceptor, a host
 * exception filter, helmet, CORS, `rawBody: true` and `bodyParser: false`. Each row starts a real app with
 * the setting on Express and on Fastify and walks the API: trigger, sync, status, cancel, events, and the
 * 400, 401, 404 and 429 answers. Also: a host that opts its throttler back in (`applyHostThrottler`), a
 * host's own routes, which keep the host's settings, and the trigger URL the module hands out under a global
 * prefix whose `exclude` covers the webhook routes or not: always where the route answers.
 */
import {
  Body,
  ClassSerializerInterceptor,
  Controller,
  type ExceptionFilter,
  Catch,
  Get,
  type INestApplication,
  Module,
  Post,
  RequestMethod,
  ValidationPipe,
  VersioningType,
  type ArgumentsHost,
} from '@nestjs/common';
import { APP_GUARD, Reflector } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import fastifyHelmet from '@fastify/helmet';
import helmet from 'helmet';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { WebhookTriggerAdminModule } from '../../src/index.js';
import { ADMIN_TEST_TOKEN, TestAdminGuard } from '../fixtures/admin-guard.js';
import { cancelRun, expectError, getStatus, request, triggerBot } from '../helpers/http.js';
import {
  ADAPTERS,
  type AdapterName,
  type TestTrigger,
  type WebhookTestApp,
  createTrigger,
  startWebhookApp,
} from '../helpers/webhook-app.js';

/** A route of the host's own, to show the host's settings are in force. */
@Controller('ping')
class HostPingController {
  @Get()
  ping(): { pong: true } {
    return { pong: true };
  }
}

/** A host's own route whose path ends like the module's trigger path: its body is the host's. */
@Controller('partners/webhooks')
class HostPartnerController {
  @Post(':id/trigger')
  hook(@Body() body: unknown): unknown {
    return { got: body ?? null };
  }
}

/** Where a host's global prefix puts its own routes and the module's. */
const MOUNTS: Array<{ name: string; configure?: (app: INestApplication) => void; host: string; webhooks: string }> = [
  { name: 'no global prefix', host: '', webhooks: '' },
  { name: "the global prefix 'api'", configure: (app) => void app.setGlobalPrefix('api'), host: '/api', webhooks: '/api' },
  {
    name: "the global prefix 'api' that excludes the webhook routes",
    configure: (app) => void app.setGlobalPrefix('api', { exclude: ['webhooks/*path'] }),
    host: '/api',
    webhooks: '',
  },
];

/** A host filter that answers every error its own way: the webhook routes keep theirs. */
@Catch()
class HostEverythingFilter implements ExceptionFilter {
  catch(_exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<{ status?: (n: number) => unknown; code?: (n: number) => unknown }>();
    const reply = (response.code ?? response.status)!.call(response, 418) as { send: (b: unknown) => void; json?: (b: unknown) => void };
    (reply.json ?? reply.send).call(reply, { host: 'filter' });
  }
}

@Module({
  imports: [ThrottlerModule.forRoot([{ ttl: 60_000, limit: 5 }])],
  providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
})
class HostThrottlerModule {}

@Module({
  imports: [
    ThrottlerModule.forRoot({
      throttlers: [
        { name: 'short', ttl: 1_000, limit: 3 },
        { name: 'long', ttl: 60_000, limit: 5 },
      ],
    }),
  ],
  providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
})
class HostNamedThrottlersModule {}

interface HostSetting {
  name: string;
  /** Modules of the host. */
  imports?: Array<typeof HostThrottlerModule>;
  /** Before listening, as the host's main.ts would. */
  configure?: (app: INestApplication, adapter: AdapterName) => void | Promise<void>;
  /** Options of `NestFactory.create` (here `createNestApplication`). */
  appOptions?: { rawBody?: boolean; bodyParser?: boolean; cors?: boolean };
  /** Where the host's settings put the API (a global prefix moves it: that is the host's choice). */
  prefix?: string;
  /** Headers a client of this host sends on every request (e.g. a version header). */
  headers?: Record<string, string>;
  /** What the host's own route answers, proving the setting is in force. */
  hostRoute?: { path: string; headers?: Record<string, string>; expect: (res: Awaited<ReturnType<typeof request>>) => void };
}

const SETTINGS: HostSetting[] = [
  { name: 'no host settings (the reference)' },
  {
    name: 'a global ThrottlerGuard (5 a minute)',
    imports: [HostThrottlerModule],
    hostRoute: { path: 'ping', expect: (res) => expect(res.status).toBe(200) },
  },
  { name: 'a global ThrottlerGuard with named throttlers (3 a second, 5 a minute)', imports: [HostNamedThrottlersModule] },
  {
    name: 'URI versioning with default version 1',
    configure: (app) => void app.enableVersioning({ type: VersioningType.URI, defaultVersion: '1' }),
    hostRoute: { path: 'v1/ping', expect: (res) => expect(res.body).toEqual({ pong: true }) },
  },
  {
    name: 'header versioning with default version 1',
    configure: (app) => void app.enableVersioning({ type: VersioningType.HEADER, header: 'X-API-Version', defaultVersion: '1' }),
    headers: { 'X-API-Version': '2' },
  },
  {
    name: 'media-type versioning with default version 1',
    configure: (app) => void app.enableVersioning({ type: VersioningType.MEDIA_TYPE, key: 'v=', defaultVersion: '1' }),
    headers: { Accept: 'application/json;v=2' },
  },
  {
    name: 'a global prefix with excludes',
    configure: (app) => void app.setGlobalPrefix('api', { exclude: ['ping'] }),
    prefix: '/api',
    hostRoute: { path: 'ping', expect: (res) => expect(res.body).toEqual({ pong: true }) },
  },
  {
    name: 'a strict global ValidationPipe (whitelist, forbidNonWhitelisted, transform)',
    configure: (app) => void app.useGlobalPipes(new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true })),
  },
  {
    name: 'a global ClassSerializerInterceptor',
    configure: (app) => void app.useGlobalInterceptors(new ClassSerializerInterceptor(app.get(Reflector))),
  },
  {
    name: 'a host exception filter that catches everything',
    configure: (app) => void app.useGlobalFilters(new HostEverythingFilter()),
    hostRoute: {
      path: 'nowhere',
      expect: (res) => expect({ status: res.status, body: res.body }).toEqual({ status: 418, body: { host: 'filter' } }),
    },
  },
  {
    name: 'helmet',
    configure: async (app, adapter) => {
      if (adapter === 'fastify') await (app as NestFastifyApplication).register(fastifyHelmet);
      else app.use(helmet());
    },
    hostRoute: { path: 'ping', expect: (res) => expect(res.headers.get('x-content-type-options')).toBe('nosniff') },
  },
  {
    name: 'CORS',
    appOptions: { cors: true },
    hostRoute: {
      path: 'ping',
      headers: { Origin: 'https://elsewhere.example' },
      expect: (res) => expect(res.headers.get('access-control-allow-origin')).toBe('*'),
    },
  },
  { name: 'rawBody: true', appOptions: { rawBody: true } },
  { name: 'bodyParser: false', appOptions: { bodyParser: false } },
];

/** What `setGlobalPrefix`'s `exclude` takes: paths, or RouteInfos (`{ path, method }`; not exported by NestJS 12). */
type GlobalPrefixExclude = NonNullable<Parameters<INestApplication['setGlobalPrefix']>[1]>['exclude'];

/** The trigger's URLs under this host's prefix. */
const under = (t: TestTrigger, baseUrl: string, prefix = ''): TestTrigger => ({
  ...t,
  url: `${baseUrl}${prefix}/webhooks/${t.id}/trigger`,
});

describe.each(ADAPTERS)('the webhook API in a host with settings, on %s', (adapter, makeAdapter) => {
  describe.each(SETTINGS)('$name', (setting) => {
    let t: WebhookTestApp;
    let echo: TestTrigger;
    let limited: TestTrigger;
    const h = setting.headers ?? {};

    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: {
          rateLimits: { perTrigger: { limit: 10, ttlMs: 60_000 }, perAccount: { limit: 1_000, ttlMs: 60_000 } },
          accounts: { acct: { credits: 1_000 } },
        },
        imports: setting.imports,
        controllers: [HostPingController],
        appOptions: setting.appOptions,
        configure: (app) => setting.configure?.(app, adapter),
      });
      echo = under(await createTrigger(t, 'echo'), t.baseUrl, setting.prefix);
      limited = under(await createTrigger(t, 'echo', 'limited'), t.baseUrl, setting.prefix);
    });
    afterAll(async () => {
      await t?.close();
    });

    it("keeps the spec's paths, codes and bodies: trigger, sync, status, cancel of a finished run, events", async () => {
      const accepted = await triggerBot(echo, { hello: 'host' }, { headers: h });
      expect({ status: accepted.status, body: accepted.body }).toEqual({
        status: 200,
        body: { success: true, invocation: { id: expect.stringMatching(/^inv_/) } },
      });
      const id = accepted.body.invocation.id as string;
      const synced = await request(`${echo.url}/invocation/${id}/sync`, { headers: { 'x-key': echo.key, ...h } });
      expect({ status: synced.status, body: synced.body }).toEqual({
        status: 200,
        body: { success: true, outputs: [{ title: 'hello', message: 'host' }] },
      });
      const status = await getStatus(echo, id, undefined, h);
      expect(status.status).toBe(200);
      expect(status.body.invocation).toMatchObject({ id, status: 'succeeded' });
      expectError(await cancelRun(echo, id, undefined, { headers: h }), 409);
      const events = await request(`${echo.url}/invocation/${id}/events`, { headers: { 'x-key': echo.key, ...h } });
      expect(events.status).toBe(200);
      expect(events.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(events.text).toMatch(/event: (done|succeeded)/);
    });

    it('answers 400 for bad JSON, 401 for a wrong key, 404 for an unknown trigger or run, with the JSON error body', async () => {
      expectError(await triggerBot(echo, undefined, { raw: '{"open": ', headers: h }), 400);
      expectError(await triggerBot(echo, {}, { key: 'wrong-key', headers: h }), 401);
      expectError(await triggerBot({ ...echo, url: echo.url.replace(echo.id, 'trg_doesnotexist000000000') }, {}, { headers: h }), 404);
      expectError(await request(`${echo.url}/invocation/inv_doesnotexist000000000/sync`, { headers: { 'x-key': echo.key, ...h } }), 404);
    });

    it("counts only the module's limits: 10 triggers pass (the host's throttler is skipped), the 11th gets the spec's 429", async () => {
      const answers = [];
      for (let i = 0; i < 11; i++) answers.push(await triggerBot(limited, { i: String(i) }, { headers: h }));
      expect(answers.slice(0, 10).map((a) => a.status)).toEqual(Array(10).fill(200));
      expectError(answers[10], 429);
      expect(Number(answers[10].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    });

    if (setting.hostRoute) {
      const route = setting.hostRoute;
      it("the host's own routes keep the host's setting", async () => {
        route.expect(await request(`${t.baseUrl}/${route.path}`, { headers: route.headers }));
      });
    }
  });

  describe.each(MOUNTS)("a host's own route whose path ends in /webhooks/:id/trigger, under $name", (mount) => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: { accounts: { acct: { credits: 100 } } },
        controllers: [HostPartnerController],
        configure: mount.configure,
      });
    });
    afterAll(() => t?.close());

    it("keeps its body: the module takes only its own routes' bodies, which it still serves", async () => {
      const own = await request(`${t.baseUrl}${mount.host}/partners/webhooks/acme/trigger`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"hello":"host"}',
      });
      expect({ status: own.status, body: own.body }).toEqual({ status: 201, body: { got: { hello: 'host' } } });
      const echo = under(await createTrigger(t, 'echo'), t.baseUrl, mount.webhooks);
      const accepted = await triggerBot(echo, { hello: 'module' });
      expect(accepted.status).toBe(200);
      const synced = await request(`${echo.url}/invocation/${accepted.body.invocation.id}/sync`, { headers: { 'x-key': echo.key } });
      expect(synced.body).toEqual({ success: true, outputs: [{ title: 'hello', message: 'module' }] });
    });
  });

  it('the admin screens and API stay at their path under URI versioning with a default version', async () => {
    const t = await startWebhookApp(makeAdapter, {
      imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [TestAdminGuard] })],
      configure: (app) => void app.enableVersioning({ type: VersioningType.URI, defaultVersion: '1' }),
    });
    try {
      const auth = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
      const bots = await request(`${t.baseUrl}/admin/api/bots`, { headers: auth });
      expect(bots.status).toBe(200);
      expect(bots.body.map((b: { id: string }) => b.id)).toContain('echo');
      expect((await request(`${t.baseUrl}/admin`, { headers: auth })).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  // The URL the module hands out (WebhookTriggersAdmin, the admin API, so the screens' View and curl) must be the
  // one the router serves: under the global prefix, unless the prefix's exclude covers the webhook routes.
  describe.each<{ name: string; exclude?: GlobalPrefixExclude; at: string }>([
    { name: 'a global prefix', at: '/api' },
    { name: "a global prefix whose exclude covers the webhook routes ('webhooks/*path')", exclude: ['webhooks/*path'], at: '' },
    {
      name: 'a global prefix whose exclude covers the webhook routes (RouteInfo, each method)',
      exclude: [
        { path: 'webhooks/:triggerId/trigger', method: RequestMethod.POST },
        { path: 'webhooks/:triggerId/trigger/*rest', method: RequestMethod.ALL },
      ],
      at: '',
    },
    { name: "a global prefix whose exclude covers a host route ('ping')", exclude: ['ping'], at: '/api' },
  ])('the trigger URL the module hands out, with $name', ({ exclude, at }) => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: { accounts: { acct: { credits: 100 } } },
        imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [TestAdminGuard] })],
        controllers: [HostPingController],
        globalPrefix: 'api',
        globalPrefixOptions: exclude && { exclude },
      });
    });
    afterAll(() => t?.close());

    it('is where the route answers: trigger, then sync under it (the curl the screens show)', async () => {
      const created = await t.admin.createTrigger('echo', { name: 'handed out' });
      const path = `${at}/webhooks/${created.id}/trigger`;
      expect(new URL(created.url).pathname).toBe(path);
      const echo = { id: created.id, key: created.key, botId: 'echo', url: `${t.baseUrl}${path}` };
      const accepted = await triggerBot(echo, { hello: 'prefix' });
      expect({ status: accepted.status, body: accepted.body }).toEqual({
        status: 200,
        body: { success: true, invocation: { id: expect.stringMatching(/^inv_/) } },
      });
      const synced = await request(`${echo.url}/invocation/${accepted.body.invocation.id}/sync`, { headers: { 'x-key': echo.key } });
      expect({ status: synced.status, body: synced.body }).toEqual({
        status: 200,
        body: { success: true, outputs: [{ title: 'hello', message: 'prefix' }] },
      });
      // The other place answers 404: the URL is the one the router chose, not one that happens to work.
      const elsewhere = at ? `/webhooks/${created.id}/trigger` : `/api/webhooks/${created.id}/trigger`;
      expect((await triggerBot({ ...echo, url: `${t.baseUrl}${elsewhere}` }, {})).status).toBe(404);
    });

    it("is the admin API's (the screens' View), which calls it as it is", async () => {
      const auth = { authorization: `Bearer ${ADMIN_TEST_TOKEN}`, 'content-type': 'application/json' };
      const made = await request(`${t.baseUrl}/api/admin/api/bots/echo/triggers`, {
        method: 'POST',
        headers: auth,
        body: '{"name":"via api"}',
      });
      expect(made.status).toBe(201);
      expect(new URL(made.body.url).pathname).toBe(`${at}/webhooks/${made.body.id}/trigger`);
      const viewed = await request(`${t.baseUrl}/api/admin/api/triggers/${made.body.id}`, { headers: auth });
      expect(viewed.body.url).toBe(made.body.url);
      expect((await triggerBot({ url: viewed.body.url, key: made.body.key }, {})).status).toBe(200);
    });

    it("the host's own routes keep the host's prefix and exclude", async () => {
      const excluded = exclude?.includes('ping') ?? false;
      expect((await request(`${t.baseUrl}${excluded ? '' : '/api'}/ping`)).body).toEqual({ pong: true });
    });
  });

  it("a host that sets applyHostThrottler gets its throttler's 429 on the webhook routes too", async () => {
    const t = await startWebhookApp(makeAdapter, {
      options: { applyHostThrottler: true, accounts: { acct: { credits: 1_000 } } },
      imports: [HostThrottlerModule],
    });
    try {
      const echo = await createTrigger(t, 'echo');
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await triggerBot(echo, {}));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429]);
      expect(answers[5].body).toMatchObject({ statusCode: 429 }); // the throttler's own answer
    } finally {
      await t.close();
    }
  });
});
