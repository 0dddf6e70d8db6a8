/**
 * A new user's first hour, as the README tells it: an account opened by the `accounts` option runs at
 * once, a 402 for an account never opened says so, trigger URLs carry the global prefix, the X-Key
 * scheme and operation ids reach the OpenAPI document, a missing enableShutdownHooks() is warned about,
 * and a host DataSource that cannot work stops startup naming the fix.
 */
import { type DynamicModule, Injectable, Module, type INestApplication, type LoggerService } from '@nestjs/common';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  WEBHOOK_TRIGGER_ENTITIES,
  WEBHOOK_TRIGGER_MIGRATIONS,
  WEBHOOK_EVENTS,
  WebhookBot,
  WebhookBotHost,
  WebhookTriggerModule,
  WebhookTriggerAdminModule,
  WebhookTriggersAdmin,
  addWebhookKeyScheme,
  type BotOutput,
} from '../../src/index.js';
import {
  ACCOUNT_NEVER_OPENED,
  BOT_NOT_PROVIDED,
  EVENTS_WITHOUT_EMITTER,
  FIRST_TRIGGER,
  NO_BOTS,
  SHUTDOWN_HOOKS_OFF,
} from '../../src/errors/webhook-trigger.messages.js';
import { EchoBot } from '../fixtures/bots.js';
import { storedCredits } from '../helpers/db.js';
import { expectError, rawRequest, request, send, syncInvocation, triggerBot } from '../helpers/http.js';
import { ADMIN_TEST_BASIC, ADMIN_TEST_TOKEN, TestAdminGuard } from '../fixtures/admin-guard.js';
import { freePort } from '../helpers/sample-app-process.js';
import { createScratchDatabase, serviceUrl } from '../helpers/services.js';
import { ADAPTERS, UNTHROTTLED, createTrigger, startWebhookApp, triggerOn } from '../helpers/webhook-app.js';

@WebhookBot({ id: 'unfunded', accountId: 'never-opened' })
class UnfundedBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [{ title: 'ran', message: 'yes' }];
  }
}

/** Declared as a bot, and never put in a module's providers: a mistake startup must name. */
@WebhookBot({ id: 'forgotten' })
class ForgottenBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [];
  }
}

/** A logger that remembers every warning (`lines`) and every log line (`logs`). */
function warnings(): LoggerService & { lines: string[]; logs: string[] } {
  const lines: string[] = [];
  const logs: string[] = [];
  const quiet = () => undefined;
  return {
    lines,
    logs,
    log: (m: unknown) => void logs.push(String(m)),
    debug: quiet,
    verbose: quiet,
    error: quiet,
    warn: (m: unknown) => void lines.push(String(m)),
  };
}

describe.each(ADAPTERS)('first use on %s', (_name, makeAdapter) => {
  it('runs the first trigger at once when the account is opened by the accounts option, and never overwrites a balance', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'webhook-first-use-'));
    const file = { type: 'better-sqlite3' as const, file: join(dir, 'webhooks.sqlite') }; // kept across the restart
    const t = await startWebhookApp(makeAdapter, { store: file, options: { rateLimits: UNTHROTTLED, accounts: { acct: { credits: 5 } } } });
    try {
      const echo = await createTrigger(t, 'echo');
      const res = await triggerBot(echo, { hello: 'world' });
      expect(res.status).toBe(200);
      expect((await syncInvocation(echo, res.body.invocation.id)).body).toEqual({
        success: true,
        outputs: [{ title: 'hello', message: 'world' }],
      });
      expect(await storedCredits(t.store, 'acct')).toBe(4);
    } finally {
      await t.close();
    }
    // The same options on the next start: the spent credit stays spent.
    const again = await startWebhookApp(makeAdapter, { store: file, options: { accounts: { acct: { credits: 5 } } } });
    try {
      expect(await storedCredits(again.store, 'acct')).toBe(4);
    } finally {
      await again.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers 402 saying the account was never opened (without naming it or the server set-up), and 200 once it is', async () => {
    const t = await startWebhookApp(makeAdapter, { providers: [UnfundedBot], options: { rateLimits: UNTHROTTLED } });
    try {
      const trigger = await createTrigger(t, 'unfunded');
      const refused = await triggerBot(trigger, {});
      expectError(refused, 402);
      expect(refused.body.message).toMatch(/has no credits yet: it has not been funded/);
      expect(refused.body.message).not.toContain('never-opened');
      // How to open it is for the owner, in the startup warning; the outside caller gets no server set-up.
      expect(refused.body.message).not.toMatch(/option|WebhookTriggersAdmin|setCredits|owner/);
      await t.admin.setCredits('never-opened', 1);
      expect((await triggerBot(trigger, {})).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('builds trigger URLs with the global prefix, and they answer', async () => {
    const port = await freePort();
    const moduleRef = await Test.createTestingModule({
      imports: [
        WebhookTriggerModule.forRoot({
          database: { type: 'better-sqlite3', database: ':memory:' },
          publicBaseUrl: `http://127.0.0.1:${port}`,
          accounts: { acct: { credits: 1 } },
        }),
      ],
      providers: [EchoBot],
    }).compile();
    const adapter = makeAdapter();
    const app: INestApplication = adapter
      ? moduleRef.createNestApplication(adapter, { logger: false })
      : moduleRef.createNestApplication({ logger: false });
    app.setGlobalPrefix('api');
    await app.listen(port, '127.0.0.1');
    try {
      const created = await app.get(WebhookTriggersAdmin).createTrigger('echo', { name: 'prefixed' });
      expect(created.url).toBe(`http://127.0.0.1:${port}/api/webhooks/${created.id}/trigger`);
      const res = await triggerBot({ url: created.url, key: created.key }, { a: '1' });
      expect(res.status).toBe(200);
    } finally {
      await app.close();
    }
  });

  describe('trigger URLs without publicBaseUrl', () => {
    const adminAuth = { authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
    const adminImports = [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [TestAdminGuard] })];

    it('the admin API builds them from the request that views them, and code gets the port the app listens on', async () => {
      const t = await startWebhookApp(makeAdapter, { imports: adminImports });
      try {
        const inCode = await t.admin.createTrigger('echo', { name: 'in code' });
        expect(inCode.url).toBe(`http://localhost:${new URL(t.baseUrl).port}/webhooks/${inCode.id}/trigger`);

        const created = await send('POST', `${t.baseUrl}/admin/api/bots/echo/triggers`, { headers: adminAuth, json: { name: 'viewed' } });
        expect(created.status).toBe(201);
        expect(created.body.url).toBe(`${t.baseUrl}/webhooks/${created.body.id}/trigger`);
        // Another Host (a name the app is reached by): the URL says that one (node:http: fetch cannot set Host).
        const viaName = await rawRequest(`${t.baseUrl}/admin/api/triggers/${created.body.id}`, {
          headers: { ...adminAuth, host: 'bots.example.com:8443' },
        });
        expect(viaName.body.url).toBe(`http://bots.example.com:8443/webhooks/${created.body.id}/trigger`);
        // Forwarded headers count only when the host trusts its proxy: this one does not.
        const forwarded = { ...adminAuth, 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example' };
        const untrusted = await request(`${t.baseUrl}/admin/api/bots/echo/triggers`, { headers: forwarded });
        expect(untrusted.body.map((x: { url: string }) => new URL(x.url).origin)).toEqual([t.baseUrl, t.baseUrl]);
        // A Host that is not a host name is never put in a URL: the app's own address is shown instead.
        const odd = await rawRequest(`${t.baseUrl}/admin/api/triggers/${created.body.id}`, { headers: { ...adminAuth, host: 'a_b"c' } });
        if (odd.status === 200)
          expect(odd.body.url).toBe(`http://localhost:${new URL(t.baseUrl).port}/webhooks/${created.body.id}/trigger`);
        else expect(odd.status).toBe(400); // or the server refuses such a Host itself
      } finally {
        await t.close();
      }
    });

    it('behind a trusted proxy, the forwarded protocol and host; publicBaseUrl, when set, wins over both', async () => {
      // Each adapter's own way to trust the proxy: Express's `trust proxy` setting, Fastify's `trustProxy` option.
      const trustingAdapter = _name === 'fastify' ? () => new FastifyAdapter({ trustProxy: true }) : makeAdapter;
      const trusting = await startWebhookApp(trustingAdapter, {
        imports: adminImports,
        configure: (app) => {
          if (_name === 'express')
            (app.getHttpAdapter().getInstance() as { set: (k: string, v: unknown) => void }).set('trust proxy', true);
        },
      });
      try {
        const forwarded = { ...adminAuth, 'x-forwarded-proto': 'https', 'x-forwarded-host': 'bots.example.com' };
        const created = await send('POST', `${trusting.baseUrl}/admin/api/bots/echo/triggers`, {
          headers: forwarded,
          json: { name: 'proxied' },
        });
        expect(created.body.url).toBe(`https://bots.example.com/webhooks/${created.body.id}/trigger`);
      } finally {
        await trusting.close();
      }
      const fixed = await startWebhookApp(makeAdapter, {
        imports: adminImports,
        options: { publicBaseUrl: 'https://api.example.com/base' },
      });
      try {
        const created = await send('POST', `${fixed.baseUrl}/admin/api/bots/echo/triggers`, {
          headers: adminAuth,
          json: { name: 'fixed' },
        });
        expect(created.body.url).toBe(`https://api.example.com/base/webhooks/${created.body.id}/trigger`);
      } finally {
        await fixed.close();
      }
    });
  });

  it('warns at startup when shutdown hooks are off, and not when they are on', async () => {
    for (const hooks of [false, true]) {
      const log = warnings();
      const moduleRef = await Test.createTestingModule({
        imports: [WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: ':memory:' } })],
        providers: [EchoBot],
      }).compile();
      const adapter = makeAdapter();
      const app = adapter ? moduleRef.createNestApplication(adapter, { logger: log }) : moduleRef.createNestApplication({ logger: log });
      if (hooks) app.enableShutdownHooks();
      await app.init();
      await app.close();
      expect(log.lines.includes(SHUTDOWN_HOOKS_OFF)).toBe(!hooks);
    }
  });

  it('names at startup a @WebhookBot class no module provides, an app without bots, and how to make the first trigger', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'webhook-first-use-'));
    const start = async (providers: Array<typeof EchoBot>) => {
      const log = warnings();
      const moduleRef = await Test.createTestingModule({
        imports: [WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: join(dir, 'hints.sqlite') } })],
        providers,
      }).compile();
      const adapter = makeAdapter();
      const app = adapter ? moduleRef.createNestApplication(adapter, { logger: log }) : moduleRef.createNestApplication({ logger: log });
      app.enableShutdownHooks();
      await app.init();
      return { app, log };
    };
    try {
      const first = await start([EchoBot]);
      expect(first.log.lines).toContain(BOT_NOT_PROVIDED(ForgottenBot.name, 'forgotten'));
      expect(first.log.lines.some((l) => l.includes("id: 'echo'"))).toBe(false); // a provided bot is not named
      expect(first.log.logs).toContain(FIRST_TRIGGER(['echo']));
      expect(first.log.lines).not.toContain(NO_BOTS);
      await first.app.get(WebhookTriggersAdmin).createTrigger('echo', { name: 'first' });
      await first.app.close();

      const again = await start([EchoBot]); // a trigger exists now: no hint
      expect(again.log.logs.filter((l) => l.includes('no triggers yet'))).toEqual([]);
      await again.app.close();

      const none = await start([]);
      expect(none.log.lines).toContain(NO_BOTS);
      await none.app.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('with the admin screens mounted, gives their real path for the first trigger (global prefix and its exclude), and names an account never opened', async () => {
    const start = async (accounts: Record<string, { credits: number }>, exclude: string[] = []) => {
      const log = warnings();
      const moduleRef = await Test.createTestingModule({
        imports: [
          WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: ':memory:' }, accounts }),
          WebhookTriggerAdminModule.forRoot({ path: 'ops/webhooks', guards: [TestAdminGuard] }),
        ],
        providers: [EchoBot],
      }).compile();
      const adapter = makeAdapter();
      const app = adapter ? moduleRef.createNestApplication(adapter, { logger: log }) : moduleRef.createNestApplication({ logger: log });
      app.setGlobalPrefix('api', { exclude });
      app.enableShutdownHooks();
      await app.listen(0, '127.0.0.1');
      return { app, log };
    };
    const unopened = await start({});
    try {
      const screens = '/api/ops/webhooks#/bots/echo/settings';
      expect(unopened.log.logs).toContain(FIRST_TRIGGER(['echo'], screens));
      expect(unopened.log.lines).toContain(ACCOUNT_NEVER_OPENED('acct', ['echo']));
      // The path named is where the screens are: the page there answers.
      const page = await fetch(`${await unopened.app.getUrl()}${screens.split('#')[0]}`, { headers: { authorization: ADMIN_TEST_BASIC } });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('data-base="/api/ops/webhooks"');
      // The warning is true: a trigger of this account answers 402 until the account is opened.
      const created = await unopened.app.get(WebhookTriggersAdmin).createTrigger('echo', { name: 'first' });
      expect((await triggerBot({ url: created.url, key: created.key }, {})).status).toBe(402);
    } finally {
      await unopened.app.close();
    }
    const opened = await start({ acct: { credits: 1 } });
    try {
      expect(opened.log.lines.filter((l) => l.includes('has not been funded yet'))).toEqual([]);
    } finally {
      await opened.app.close();
    }
    // The global prefix's `exclude` keeps the screens at the root: the hint names the root path, where they answer.
    const excluded = await start({}, ['ops/webhooks', 'ops/webhooks/*path']);
    try {
      const screens = '/ops/webhooks#/bots/echo/settings';
      expect(excluded.log.logs).toContain(FIRST_TRIGGER(['echo'], screens));
      const page = await fetch(`${await excluded.app.getUrl()}/ops/webhooks`, { headers: { authorization: ADMIN_TEST_BASIC } });
      expect(page.status).toBe(200);
    } finally {
      await excluded.app.close();
    }
  });

  it('puts an operationId on every operation and, with addWebhookKeyScheme(), the X-Key scheme they all require', async () => {
    const t = await startWebhookApp(makeAdapter, {});
    try {
      const doc = SwaggerModule.createDocument(t.app, addWebhookKeyScheme(new DocumentBuilder().setOpenAPIVersion('3.0.3')).build());
      const operations = Object.values(doc.paths).flatMap((item) =>
        Object.values(item as Record<string, { operationId?: string; security?: unknown }>),
      );
      expect(operations.map((o) => o.operationId).sort()).toEqual([
        'cancelInvocation',
        'getInvocationStatus',
        'streamInvocationEvents',
        'triggerBot',
        'waitForBotExecution',
      ]);
      for (const op of operations) expect(op.security).toEqual([{ 'X-Key': [] }]);
      const events = (doc.paths['/webhooks/{triggerId}/trigger/invocation/{invocationId}/events'] as Record<string, unknown>).get as {
        responses: Record<string, { content?: Record<string, unknown> }>;
      };
      expect(Object.keys(events.responses['200'].content ?? {})).toEqual(['text/event-stream']);
      const trigger = (doc.paths['/webhooks/{triggerId}/trigger'] as Record<string, unknown>).post as {
        responses: Record<string, { description?: string }>;
      };
      expect(trigger.responses['503'].description).toMatch(/shutting down.*maxQueuedRuns.*Retry-After/);
      expect(doc.components?.securitySchemes?.['X-Key']).toEqual(expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Key' }));
    } finally {
      await t.close();
    }
  });

  it('keeps a trigger URL usable on another node of the same database (triggerOn)', async () => {
    const t = await startWebhookApp(makeAdapter, { options: { accounts: { acct: { credits: 1 } } } });
    try {
      const created = await t.admin.createTrigger('echo', { name: 'n' });
      expect((await triggerBot(triggerOn(t, { id: created.id, key: created.key, botId: 'echo' }), {})).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

/** A host's listener of the module's events (README, Events): called only with EventEmitterModule.forRoot(). */
@Injectable()
class RunListener {
  readonly seen: string[] = [];
  @OnEvent(WEBHOOK_EVENTS.succeeded)
  succeeded(event: { invocationId: string }) {
    this.seen.push(event.invocationId);
  }
}

/** A host's listener of its own events only. */
@Injectable()
class OtherListener {
  @OnEvent('orders.created')
  created() {}
}

describe('@OnEvent listeners of the module without EventEmitterModule', () => {
  const start = async (imports: DynamicModule[], providers: Array<new (...args: never[]) => unknown>) => {
    const log = warnings();
    const moduleRef = await Test.createTestingModule({
      imports: [WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: ':memory:' } }), ...imports],
      providers: [EchoBot, ...providers],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: log });
    app.enableShutdownHooks();
    await app.init();
    await app.close();
    return log.lines.filter((l) => l.includes('EventEmitter'));
  };

  it('warns once, naming the listener and the fix; not with the module imported, nor in an app without such listeners', async () => {
    expect(await start([], [RunListener])).toEqual([EVENTS_WITHOUT_EMITTER('RunListener.succeeded')]);
    expect(EVENTS_WITHOUT_EMITTER('RunListener.succeeded')).toMatch(/never called.*EventEmitterModule\.forRoot\(\)/);
    expect(await start([EventEmitterModule.forRoot()], [RunListener])).toEqual([]);
    expect(await start([], [OtherListener])).toEqual([]);
    expect(await start([], [])).toEqual([]);
  });
});

describe('the admin service before the app is initialised', () => {
  it('createTrigger() says to call it after app.init() or app.listen(), not that the bot is unknown, and works after', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: ':memory:' } })],
      providers: [EchoBot],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    try {
      const admin = app.get(WebhookTriggersAdmin);
      await expect(admin.createTrigger('echo', { name: 'first' })).rejects.toThrow(
        /WebhookTriggersAdmin\.createTrigger\(\) was called before the module initialised.*call it after app\.init\(\) or app\.listen\(\)/,
      );
      await app.init();
      await expect(admin.createTrigger('echo', { name: 'first' })).resolves.toMatchObject({ botId: 'echo' });
      await expect(admin.createTrigger('nope', { name: 'first' })).rejects.toThrow('Bot "nope" is not registered');
    } finally {
      await app.close();
    }
  });
});

describe('a host DataSource that cannot work stops startup, naming the fix', () => {
  if (!postgresUrl) {
    it.todo('NOT RUN: set WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test');
    return;
  }
  let db: { url: string; drop: () => Promise<void> };
  beforeEach(async () => {
    db = await createScratchDatabase(postgresUrl);
  });
  afterEach(() => db.drop());

  const compile = (imports: unknown[]) => Test.createTestingModule({ imports: imports as never[], providers: [EchoBot] }).compile();

  it('without the migrations (only the entities): names WEBHOOK_TRIGGER_MIGRATIONS', async () => {
    await expect(
      compile([
        TypeOrmModule.forRoot({ type: 'postgres', url: db.url, entities: WEBHOOK_TRIGGER_ENTITIES, logging: false }),
        WebhookTriggerModule.forRoot({ dataSourceName: 'default' }),
      ]),
    ).rejects.toThrow(/lacks the module's tables .*add WEBHOOK_TRIGGER_MIGRATIONS to its "migrations"/);
  });

  it('with synchronize: true: refused, since it drops the CHECK that credits never go below 0', async () => {
    await expect(
      compile([
        TypeOrmModule.forRoot({ type: 'postgres', url: db.url, entities: WEBHOOK_TRIGGER_ENTITIES, synchronize: true, logging: false }),
        WebhookTriggerModule.forRoot({ dataSourceName: 'default' }),
      ]),
    ).rejects.toThrow(/"synchronize: true".*set synchronize: false and run WEBHOOK_TRIGGER_MIGRATIONS/);
  });

  it('with no TypeORM module at all: says to import TypeOrmModule.forRoot(), not "can\'t resolve dependencies"', async () => {
    await expect(compile([WebhookTriggerModule.forRoot({ dataSourceName: 'default' })])).rejects.toThrow(
      /no TypeORM DataSource of that name exists here: import TypeOrmModule\.forRoot\(\)/,
    );
  });

  it('with the migrations: starts', async () => {
    @Module({})
    class Empty {}
    const moduleRef = await compile([
      Empty,
      TypeOrmModule.forRoot({
        type: 'postgres',
        url: db.url,
        entities: WEBHOOK_TRIGGER_ENTITIES,
        migrations: WEBHOOK_TRIGGER_MIGRATIONS,
        migrationsRun: true,
        logging: false,
      }),
      WebhookTriggerModule.forRoot({ dataSourceName: 'default' }),
    ]);
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    await app.close();
  });
});
