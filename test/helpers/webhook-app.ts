import type { INestApplication, LoggerService, Provider, Type } from '@nestjs/common';
import type { AbstractHttpAdapter } from '@nestjs/core';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebhookTriggerModule, WebhookTriggersAdmin, type WebhookTriggerModuleOptions } from '../../src/index.js';
import { BadOutputsBot, EchoBot, FailBot, SlowBot } from '../fixtures/bots.js';

export type AdapterName = 'express' | 'fastify';
/** `undefined` lets Nest use its default (Express) adapter. */
export type AdapterFactory = () => AbstractHttpAdapter | undefined;

/** Rows for `describe.each`: the same suite on Express (Nest's default) and on Fastify. */
export const ADAPTERS: Array<[AdapterName, AdapterFactory]> = [
  ['express', () => undefined],
  ['fastify', () => new FastifyAdapter()],
];

export const FIXTURE_BOTS: Type[] = [EchoBot, SlowBot, FailBot, BadOutputsBot];

/** Limits high enough that a suite sending many requests is never throttled by accident. */
export const UNTHROTTLED: WebhookTriggerModuleOptions['rateLimits'] = {
  perTrigger: { limit: 100_000, ttlMs: 1_000 },
  perAccount: { limit: 100_000, ttlMs: 60_000 },
};

export interface WebhookTestApp {
  app: INestApplication;
  /** e.g. `http://127.0.0.1:43123` */
  baseUrl: string;
  admin: WebhookTriggersAdmin;
  /** The SQLite file the module owns; open it with better-sqlite3 to look at rows. */
  dbFile: string;
  close(): Promise<void>;
}

export interface StartOptions {
  /** Module options; `database` defaults to a fresh SQLite file in a temp dir. */
  options?: WebhookTriggerModuleOptions;
  /** Import `EventEmitterModule.forRoot()` so the module's events are emitted. */
  events?: boolean;
  /** Providers besides the fixture bots. @default the four fixture bots */
  providers?: Provider[];
  /** Replace the fixture bots instead of adding to them. */
  onlyProviders?: boolean;
  /** Open this SQLite file (e.g. one a closed app left behind) instead of a fresh one; it is not deleted on close. */
  dbFile?: string;
  /** The app's logger (e.g. one that records every line). @default false: silent */
  logger?: LoggerService | false;
}

/** A real Nest app with the webhook module on a real SQLite file, listening on a random port. */
export async function startWebhookApp(makeAdapter: AdapterFactory, start: StartOptions = {}): Promise<WebhookTestApp> {
  const dir = start.dbFile ? undefined : mkdtempSync(join(tmpdir(), 'webhook-e2e-'));
  const dbFile = start.dbFile ?? join(dir!, 'webhooks.sqlite');
  const moduleRef = await Test.createTestingModule({
    imports: [
      ...(start.events ? [EventEmitterModule.forRoot()] : []),
      WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: dbFile }, ...start.options }),
    ],
    providers: [...(start.onlyProviders ? [] : FIXTURE_BOTS), ...(start.providers ?? [])],
  }).compile();
  const adapter = makeAdapter();
  const logger = start.logger ?? false;
  const app = adapter ? moduleRef.createNestApplication(adapter, { logger }) : moduleRef.createNestApplication({ logger });
  await app.listen(0, '127.0.0.1');
  const baseUrl = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  return {
    app,
    baseUrl,
    admin: app.get(WebhookTriggersAdmin),
    dbFile,
    async close() {
      await app.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface TestTrigger {
  id: string;
  key: string;
  botId: string;
  /** `{baseUrl}/webhooks/{id}/trigger` */
  url: string;
  syncUrl(invocationId: string): string;
}

/** Creates a trigger through the exported admin service, as a host's UI would. */
export async function createTrigger(t: WebhookTestApp, botId = 'echo', name = `${botId} trigger`): Promise<TestTrigger> {
  const created = await t.admin.createTrigger(botId, { name });
  return triggerOn(t, { id: created.id, key: created.key!, botId });
}

/** The URLs of a trigger on this app (e.g. one created before a restart, now served on another port). */
export function triggerOn(t: Pick<WebhookTestApp, 'baseUrl'>, trigger: Pick<TestTrigger, 'id' | 'key' | 'botId'>): TestTrigger {
  const url = `${t.baseUrl}/webhooks/${trigger.id}/trigger`;
  return { ...trigger, url, syncUrl: (invocationId) => `${url}/invocation/${invocationId}/sync` };
}
