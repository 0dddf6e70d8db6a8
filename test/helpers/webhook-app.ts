import type { DynamicModule, INestApplication, LoggerService, NestApplicationOptions, Provider, Type } from '@nestjs/common';
import type { AbstractHttpAdapter } from '@nestjs/core';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  WebhookTriggerModule,
  WebhookTriggersAdmin,
  type WebhookTriggerModuleExtras,
  type WebhookTriggerModuleOptions,
} from '../../src/index.js';
import { BadOutputsBot, EchoBot, FailBot, SlowBot } from '../fixtures/bots.js';
import { LIFECYCLE_BOTS } from '../fixtures/lifecycle-bots.js';
import type { TestStore } from './db.js';
import { captureEvents, type CapturedEvent } from './events.js';
import { createScratchDatabase, serviceUrl } from './services.js';

export type AdapterName = 'express' | 'fastify';
/** `undefined` lets Nest use its default (Express) adapter. */
export type AdapterFactory = () => AbstractHttpAdapter | undefined;

/** The adapters of the matrix: Express (Nest's default) and Fastify. */
export const ADAPTERS: Array<[AdapterName, AdapterFactory]> = [
  ['express', () => undefined],
  ['fastify', () => new FastifyAdapter()],
];

export type DatabaseName = 'sqlite' | 'postgres';

/** A database made for a test and removed after it. */
export interface ScratchStore {
  store: TestStore;
  drop(): Promise<void>;
}

/** One database the suites can run on. */
export interface TestDatabase {
  name: DatabaseName;
  /** Set when this database cannot run here: the environment variable to set (the rows become `it.todo`). */
  missingEnv?: string;
  /** A fresh, empty database (a SQLite file in a temp dir, or a scratch PostgreSQL database). */
  create(): Promise<ScratchStore>;
}

const SQLITE: TestDatabase = {
  name: 'sqlite',
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'webhook-e2e-'));
    return {
      store: { type: 'better-sqlite3', file: join(dir, 'webhooks.sqlite') },
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};

/**
 * Rows for `describe.each`: SQLite, and the PostgreSQL server of WEBHOOK_TEST_POSTGRES_URL (one scratch database
 * per app). Without that variable PostgreSQL comes back with `missingEnv` set (a failure in CI: see services.ts).
 * A function, not a constant, so that suites which never run on PostgreSQL do not ask for the variable.
 */
export function testDatabases(): TestDatabase[] {
  const pgUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');
  const postgres: TestDatabase = {
    name: 'postgres',
    missingEnv: pgUrl ? undefined : 'WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test',
    async create() {
      if (!pgUrl) throw new Error('WEBHOOK_TEST_POSTGRES_URL is not set');
      const db = await createScratchDatabase(pgUrl);
      return { store: { type: 'postgres', url: db.url }, drop: db.drop };
    },
  };
  return [SQLITE, postgres];
}

/** One row of the HTTP suites' matrix: the adapter and the database a suite's apps run on. */
export interface AppMatrixRow {
  adapterName: AdapterName;
  makeAdapter: AdapterFactory;
  database: TestDatabase;
}

/**
 * The HTTP suites' matrix, as `describe.each`: the feature on every adapter (Express, Fastify) and every
 * database (SQLite, and PostgreSQL from WEBHOOK_TEST_POSTGRES_URL), titled "<feature> on fastify with postgres".
 * A database that cannot run here leaves an `it.todo` naming the variable to set (in CI a missing variable
 * fails instead: see services.ts).
 */
export function describeOnEveryAdapterAndDatabase(feature: string, suite: (row: AppMatrixRow) => void): void {
  const rows = ADAPTERS.flatMap(([adapterName, makeAdapter]) =>
    testDatabases().map((database) => [adapterName, database.name, { adapterName, makeAdapter, database }] as const),
  );
  describe.each(rows)(`${feature} on %s with %s`, (_adapterName, databaseName, row) => {
    if (row.database.missingEnv) {
      it.todo(`${databaseName} rows NOT RUN: set ${row.database.missingEnv}`);
      return;
    }
    suite(row);
  });
}

/**
 * The adapters of the matrix on SQLite only, titled "<feature> on fastify, SQLite only": for tests that read or
 * change the app's SQLite file behind its back (`invocationRows`, `writeDb`, `rowOf` in db.ts).
 */
export function describeOnEveryAdapter(feature: string, suite: (row: AppMatrixRow) => void): void {
  const rows = ADAPTERS.map(([adapterName, makeAdapter]) => [adapterName, { adapterName, makeAdapter, database: SQLITE }] as const);
  describe.each(rows)(`${feature} on %s, SQLite only`, (_adapterName, row) => suite(row));
}

/** The module's `database` option for a store. */
function databaseOption(store: TestStore): NonNullable<WebhookTriggerModuleOptions['database']> {
  return store.type === 'postgres' ? { type: 'postgres', url: store.url } : { type: 'better-sqlite3', database: store.file };
}

export const FIXTURE_BOTS: Type[] = [EchoBot, SlowBot, FailBot, BadOutputsBot];

/** Limits high enough that a suite sending many requests is never throttled by accident. */
export const UNTHROTTLED: WebhookTriggerModuleOptions['rateLimits'] = {
  perTrigger: { limit: 100_000, ttlMs: 1_000 },
  perAccount: { limit: 100_000, ttlMs: 60_000 },
};

/** The app most HTTP suites share ("a roomy configuration"): never throttled, the module's events on, the fixture bots. */
export const ROOMY_APP: StartOptions = { options: { rateLimits: UNTHROTTLED }, events: true };

/**
 * Tight limits and no history retention: 3 wrong keys per minute per IP, 4 requests per trigger per minute,
 * `historyRetentionDays: 0`, a 200 ms shutdown grace, the lifecycle bots (the rate-limit and lifecycle suites).
 */
export const TIGHT_LIMITS_APP: StartOptions = {
  options: {
    rateLimits: { perTrigger: { limit: 4, ttlMs: 60_000 }, perAccount: { limit: 1_000, ttlMs: 60_000 } },
    failedKeyLimit: { limit: 3, ttlMs: 60_000 },
    historyRetentionDays: 0,
    shutdownGraceMs: 200,
  },
  providers: LIFECYCLE_BOTS,
};

/** The app of one describe block, and the module events it emitted (empty unless `events` is on). */
export interface DescribeApp {
  readonly app: WebhookTestApp;
  readonly events: CapturedEvent[];
}

/**
 * Starts an app for the describe block it is called in: in its `beforeAll` (on `row`'s adapter and database,
 * `start` as for `startWebhookApp`, `providers` added to the preset's), closed in its `afterAll`, and `account`
 * given `credits` before each test (before the block's own `beforeEach`).
 */
export function describeApp(
  row: Pick<AppMatrixRow, 'makeAdapter'> & Partial<Pick<AppMatrixRow, 'database'>>,
  start: StartOptions,
  { providers = [], account = 'acct', credits = 1000 }: { providers?: Provider[]; account?: string; credits?: number } = {},
): DescribeApp {
  let app: WebhookTestApp | undefined;
  let events: CapturedEvent[] = [];
  beforeAll(async () => {
    app = await startWebhookApp(row.makeAdapter, {
      ...start,
      database: row.database ?? start.database,
      providers: [...(start.providers ?? []), ...providers],
    });
    if (start.events) events = captureEvents(app);
  });
  afterAll(() => app?.close());
  beforeEach(() => app!.admin.setCredits(account, credits));
  return {
    get app() {
      if (!app) throw new Error('The app starts in beforeAll: read it inside a hook or a test');
      return app;
    },
    get events() {
      return events;
    },
  };
}

/**
 * The app the lifecycle-minded suites share (sync, status and cancel, idempotency, events, lifecycle): room
 * for 64 runs (the default), a 1 s idempotency TTL, a 200 ms shutdown grace, the lifecycle bots, events on.
 */
export const LIFECYCLE_APP: StartOptions = {
  options: { rateLimits: UNTHROTTLED, idempotencyTtlMs: 1_000, shutdownGraceMs: 200, failedKeyLimit: { limit: 1_000, ttlMs: 60_000 } },
  events: true,
  providers: LIFECYCLE_BOTS,
};

/** One run slot, so a long run holds it: what the queueing, cancel-while-queued and sync-timeout tests need. */
export const ONE_RUN_SLOT_APP: StartOptions = {
  options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 1, syncTimeoutMs: 500, shutdownGraceMs: 200 },
  events: true,
  providers: LIFECYCLE_BOTS,
};

export interface WebhookTestApp {
  app: INestApplication;
  /** e.g. `http://127.0.0.1:43123` */
  baseUrl: string;
  admin: WebhookTriggersAdmin;
  /** The database the module owns; read its rows with `storedInvocations` / `storedCredits` (db.ts). */
  store: TestStore;
  /** The SQLite file the module owns; open it with better-sqlite3 to look at rows. Throws for an app on PostgreSQL. */
  readonly dbFile: string;
  close(): Promise<void>;
}

export interface StartOptions {
  /** Module options; `database` defaults to a fresh database of `database` (SQLite unless told). */
  options?: WebhookTriggerModuleOptions;
  /** The module's extras, e.g. `rateLimitStorage: rateLimitStorageOn(clock)` (test/fakes/manual-clock.ts). */
  extras?: WebhookTriggerModuleExtras;
  /** Which database a fresh one is made on, and dropped on close. @default SQLite */
  database?: TestDatabase;
  /** Open this database (e.g. one a closed app left behind) instead of a fresh one; it is not dropped on close. */
  store?: TestStore;
  /** Import `EventEmitterModule.forRoot()` so the module's events are emitted. */
  events?: boolean;
  /** Providers besides the fixture bots. @default the four fixture bots */
  providers?: Provider[];
  /** Replace the fixture bots instead of adding to them. */
  onlyProviders?: boolean;
  /** Controllers of the test module. */
  controllers?: Type[];
  /** Open this SQLite file (e.g. one a closed app left behind) instead of a fresh one; it is not deleted on close. */
  dbFile?: string;
  /** The app's logger (e.g. one that records every line). @default false: silent */
  logger?: LoggerService | false;
  /** More modules for the app (e.g. `WebhookTriggerAdminModule.forRoot(…)`). */
  imports?: Array<Type | DynamicModule>;
  /** `app.setGlobalPrefix(…)` before listening. */
  globalPrefix?: string;
  /** The options of that `setGlobalPrefix` call, e.g. `{ exclude: ['webhooks/*path'] }`. */
  globalPrefixOptions?: Parameters<INestApplication['setGlobalPrefix']>[1];
  /** Options of `createNestApplication` besides the logger (as a host passes to `NestFactory.create`). */
  appOptions?: NestApplicationOptions;
  /** Called before listening, as a host's main.ts sets the app up (versioning, pipes, filters, middleware). */
  configure?: (app: INestApplication) => void | Promise<void>;
  /** Listen on this port (e.g. one named in `publicBaseUrl` beforehand) instead of a random one. */
  port?: number;
}

/** A real Nest app with the webhook module on a real database (a SQLite file by default), listening on a random port. */
export async function startWebhookApp(makeAdapter: AdapterFactory, start: StartOptions = {}): Promise<WebhookTestApp> {
  const given: TestStore | undefined = start.store ?? (start.dbFile ? { type: 'better-sqlite3', file: start.dbFile } : undefined);
  const scratch = given ? undefined : await (start.database ?? SQLITE).create();
  const store = given ?? scratch!.store;
  let app: INestApplication | undefined;
  try {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ...(start.events ? [EventEmitterModule.forRoot()] : []),
        // A host storage (the `storage` extra) opens no database.
        WebhookTriggerModule.forRoot({
          ...('storage' in { ...start.options, ...start.extras } ? {} : { database: databaseOption(store) }),
          ...start.options,
          ...start.extras,
        }),
        ...(start.imports ?? []),
      ],
      controllers: start.controllers ?? [],
      providers: [...(start.onlyProviders ? [] : FIXTURE_BOTS), ...(start.providers ?? [])],
    }).compile();
    const adapter = makeAdapter();
    const logger = start.logger ?? false;
    const appOptions = { ...start.appOptions, logger };
    app = adapter ? moduleRef.createNestApplication(adapter, appOptions) : moduleRef.createNestApplication(appOptions);
    if (start.globalPrefix) app.setGlobalPrefix(start.globalPrefix, start.globalPrefixOptions);
    await start.configure?.(app);
    await app.listen(start.port ?? 0, '127.0.0.1');
  } catch (e) {
    await app?.close().catch(() => undefined);
    await scratch?.drop();
    throw e;
  }
  const started = app;
  const server = started.getHttpServer() as Server;
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const baseUrl = (await started.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  return {
    app: started,
    baseUrl,
    admin: started.get(WebhookTriggersAdmin),
    store,
    get dbFile(): string {
      if (store.type !== 'better-sqlite3')
        throw new Error('This app is on PostgreSQL: read its rows with storedInvocations/storedCredits (db.ts)');
      return store.file;
    },
    async close() {
      // Node's fetch can leave a pooled connection open that never carried a request (e.g. one opened while
      // another was busy). Node's server does not count it as idle and waits for it to time out (on Fastify,
      // keepAliveTimeout: 72 s) before close() returns. Once the server has stopped listening (after the
      // graceful shutdown), such connections are dropped: nothing was ever sent on them.
      const sweep = setInterval(() => {
        if (!server.listening) for (const socket of sockets) if (socket.bytesRead === 0) socket.destroy();
      }, 20);
      try {
        await started.close();
      } finally {
        clearInterval(sweep);
        await scratch?.drop();
      }
    },
  };
}

export interface TestTrigger {
  id: string;
  key: string;
  botId: string;
  /** `{baseUrl}/webhooks/{id}/trigger` */
  url: string;
}

/** Creates a trigger through the exported admin service, as a host's UI would. */
export async function createTrigger(t: WebhookTestApp, botId = 'echo', name = `${botId} trigger`): Promise<TestTrigger> {
  const created = await t.admin.createTrigger(botId, { name });
  return triggerOn(t, { id: created.id, key: created.key, botId });
}

/** The URLs of a trigger on this app (e.g. one created before a restart, now served on another port). */
export function triggerOn(t: Pick<WebhookTestApp, 'baseUrl'>, trigger: Pick<TestTrigger, 'id' | 'key' | 'botId'>): TestTrigger {
  return { ...trigger, url: `${t.baseUrl}/webhooks/${trigger.id}/trigger` };
}
