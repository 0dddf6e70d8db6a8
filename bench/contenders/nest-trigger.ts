// Our trigger endpoint: a Nest app (Express or Fastify) importing the compiled WebhookTriggerModule on
// its own SQLite file, with rate limits raised so nothing is throttled and credits that never run out.
//
// Bots (account "bench"):
// - `echo`: the test fixture's echo bot, for throughput and end-to-end latency;
// - `release`: waits until the orchestrator releases it (over IPC), for the sync-waiter benchmarks.
//
// In `waiters` mode the process also records, per run, when main() returned and when the module
// reported the run finished (its `succeeded` event, emitted right after it woke the waiters), counts
// the SQL statements the process executes, and counts sync requests as they arrive.
import 'reflect-metadata';
import { type DynamicModule, type INestApplication, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventEmitter2, EventEmitterModule } from '@nestjs/event-emitter';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BotContext, BotInputs, BotOutput, InvocationEvent } from '../../src/index.js';
import { lib } from '../lib.js';
import { fileConnection, installSqliteProbe } from '../sqlite-probe.js';
import { announceReady, childConfig, dieOnUnhandled, now, serveRpc, sqliteSettings } from '../shared.js';

export interface NestTriggerConfig {
  adapter: 'express' | 'fastify';
  waiters: boolean;
  /** @default the module's default (64) */
  maxConcurrentRuns?: number;
}

export const BENCH_ACCOUNT = 'bench';
/** "Nothing is throttled": a million per second per trigger and per account. The module's sliding
 * window keeps a Float64Array of `limit` entries per key, so the limit must stay allocatable. */
export const UNTHROTTLED = { perTrigger: { limit: 1_000_000, ttlMs: 1_000 }, perAccount: { limit: 1_000_000, ttlMs: 1_000 } };

@lib.WebhookBot({ id: 'echo', name: 'Echo', accountId: BENCH_ACCOUNT })
class EchoBot extends lib.WebhookBotHost {
  async main(inputs: BotInputs): Promise<BotOutput[]> {
    return Object.entries(inputs).map(([title, v]) => ({ title, message: typeof v === 'string' ? v : JSON.stringify(v) }));
  }
}

/** Holds runs inside main() until released; records when each main() returned. */
class Gate {
  private readonly held = new Map<string, () => void>();
  entered = 0;
  readonly returnedAt = new Map<string, number>();

  wait(invocationId: string): Promise<void> {
    this.entered++;
    return new Promise<void>((resolve) => this.held.set(invocationId, resolve));
  }

  get holding(): number {
    return this.held.size;
  }

  /** Lets every held run return at once; answers when that happened. */
  releaseAll(): number {
    const at = now();
    const all = [...this.held.values()];
    this.held.clear();
    for (const resolve of all) resolve();
    return at;
  }

  /** Lets the held runs return one at a time, `intervalMs` apart. */
  async releaseEach(intervalMs: number): Promise<number> {
    const at = now();
    for (const [id, resolve] of [...this.held]) {
      this.held.delete(id);
      resolve();
      await new Promise((r) => setTimeout(r, intervalMs));
    }
    return at;
  }
}

const gate = new Gate();

@lib.WebhookBot({ id: 'release', name: 'Released by the bench', accountId: BENCH_ACCOUNT })
class ReleaseBot extends lib.WebhookBotHost {
  async main(_inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    await gate.wait(ctx.invocationId);
    gate.returnedAt.set(ctx.invocationId, now());
    return [{ title: 'released', message: 'ok' }];
  }
}

@Module({})
class BenchAppModule {
  static configure(config: NestTriggerConfig, dbFile: string): DynamicModule {
    return {
      module: BenchAppModule,
      imports: [
        ...(config.waiters ? [EventEmitterModule.forRoot()] : []),
        lib.WebhookTriggerModule.forRoot({
          database: { type: 'better-sqlite3', database: dbFile },
          rateLimits: UNTHROTTLED,
          syncTimeoutMs: 600_000,
          // The waiters test holds every run at once; otherwise the module's defaults, as a user gets them.
          ...(config.maxConcurrentRuns ? { maxConcurrentRuns: config.maxConcurrentRuns } : {}),
        }),
      ],
      providers: [EchoBot, ReleaseBot],
    };
  }
}

async function main(): Promise<void> {
  dieOnUnhandled('nest-trigger');
  const config = childConfig<NestTriggerConfig>();
  // Before the module opens its database, so that every statement it prepares is seen.
  const probe = installSqliteProbe({ count: config.waiters });
  const dir = mkdtempSync(join(tmpdir(), 'bench-nest-trigger-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const dbFile = join(dir, 'webhooks.sqlite');

  const module = BenchAppModule.configure(config, dbFile);
  const logger = { logger: ['error', 'warn'] as Array<'error' | 'warn'> };
  const app =
    config.adapter === 'fastify'
      ? await NestFactory.create<INestApplication<Server>>(module, new FastifyAdapter(), logger)
      : await NestFactory.create<INestApplication<Server>>(module, logger);
  await app.listen(0, '127.0.0.1');

  const admin = app.get(lib.WebhookTriggersAdmin);
  await admin.setCredits(BENCH_ACCOUNT, 1_000_000_000_000);
  const echo = await admin.createTrigger('echo', { name: 'bench echo' });
  const release = await admin.createTrigger('release', { name: 'bench release' });

  const completedAt = new Map<string, number>();
  let syncSeen = 0;
  if (config.waiters) {
    app.get(EventEmitter2).on(lib.WEBHOOK_EVENTS.succeeded, (e: InvocationEvent) => completedAt.set(e.invocationId, now()));
    app.getHttpServer().on('request', (req: IncomingMessage) => {
      if (req.url?.endsWith('/sync')) syncSeen++;
    });
  }

  // A second, read-only connection to see how many runs are still queued or running; the probe ignores it.
  let reader: Database.Database | undefined;
  const pendingRuns = (): number => {
    reader ??= probe.ignore(new Database(dbFile, { readonly: true, fileMustExist: true }));
    return (reader.prepare("SELECT count(*) AS n FROM webhook_invocations WHERE status IN ('queued', 'running')").get() as { n: number }).n;
  };

  serveRpc({
    pending: () => pendingRuns(),
    /** Waits until no run is queued or running. */
    drain: async ({ timeoutMs }: { timeoutMs: number }) => {
      const start = now();
      const pendingAtStart = pendingRuns();
      while (pendingRuns() > 0) {
        if (now() - start > timeoutMs) throw new Error(`runs still pending after ${timeoutMs} ms: ${pendingRuns()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return { ms: now() - start, pendingAtStart };
    },
    gate: () => ({ entered: gate.entered, holding: gate.holding }),
    syncSeen: () => syncSeen,
    statements: () => probe.executed(),
    releaseAll: () => gate.releaseAll(),
    releaseEach: ({ intervalMs }: { intervalMs: number }) => gate.releaseEach(intervalMs),
    /** Per-run times recorded since the last call (and forgotten). */
    times: () => {
      const out = { returnedAt: Object.fromEntries(gate.returnedAt), completedAt: Object.fromEntries(completedAt) };
      gate.returnedAt.clear();
      completedAt.clear();
      return out;
    },
  });

  const db = fileConnection(probe);
  announceReady({
    port: (app.getHttpServer().address() as AddressInfo).port,
    triggers: { echo: { id: echo.id, key: echo.key }, release: { id: release.id, key: release.key } },
    sqlite: db ? sqliteSettings(db) : undefined,
  });
}

void main();
