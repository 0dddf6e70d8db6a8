// One node of the several-node set-up: the compiled WebhookTriggerModule on PostgreSQL, with Redis for
// the run queue (BullMqBotRunner), the rate limits (RedisRateLimitStorage) and, unless `bus: 'memory'`,
// "run finished" (RedisClusterBus). Rate limits raised so nothing is throttled, credits that never
// run out, like nest-trigger.ts.
//
// - role `api`: a Nest HTTP app that accepts triggers and answers sync, never runs a bot;
// - role `worker`: an application context without HTTP (`NestFactory.createApplicationContext`) that
//   runs bots from the queue;
// - role `all`: both in one process (the one-node baseline); with `stack: 'local'`, on PostgreSQL alone.
//
// Bots (account "bench"): `echo` (throughput) and `short` (sleeps `inputs.ms` ms, for the cross-node
// wake-up). While recording is on (IPC `record`), the process notes per run when `short`'s main()
// returned, when the module published "run finished" (right after the outcome was committed), and when
// a sync request for it arrived here.
import 'reflect-metadata';
import { type DynamicModule, type INestApplication, type INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BotContext, BotInputs, BotOutput, ClusterBus, WebhookTriggerRole } from '../../src/index.js';
import { lib, redisLib } from '../lib.js';
import { announceReady, childConfig, dieOnUnhandled, now, serveRpc, type TriggerRef } from '../shared.js';

export interface NestClusterConfig {
  role: WebhookTriggerRole;
  /** HTTP adapter of `api` / `all` nodes. */
  adapter: 'express' | 'fastify';
  databaseUrl: string;
  redisUrl: string;
  keyPrefix: string;
  /** How "run finished" reaches sync waiters: Redis pub/sub (needed across processes) or in process. */
  bus: 'redis' | 'memory';
  /** Create the account's credits and the triggers (one node per database does it) and announce them. */
  seed: boolean;
  /**
   * `redis` (default): BullMQ, Redis rate limits and `bus` as set. `local` (one node, role all only): the
   * in-process runner, in-process rate limits and bus: PostgreSQL is the only service.
   */
  stack?: 'redis' | 'local';
}

const BENCH_ACCOUNT = 'bench';
/** As in nest-trigger.ts: a million per second per trigger and per account, so nothing is throttled. */
const UNTHROTTLED = { perTrigger: { limit: 1_000_000, ttlMs: 1_000 }, perAccount: { limit: 1_000_000, ttlMs: 1_000 } };

/**
 * What this process asked of PostgreSQL and Redis, for the scaling model: every `pg` client query (each
 * one round trip: the pg driver does not pipeline) and every ioredis command (a pipeline's commands share
 * a round trip, so this bounds Redis round trips from above). Counted by wrapping the drivers' prototypes
 * the library loads (the same module instances), at no cost to what is measured beyond an increment.
 */
const counters = { pgQueries: 0, redisCommands: 0 };
function countDriverCalls(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the driver instance the library uses
  const pg = require('pg') as { Client: { prototype: { query: (...args: unknown[]) => unknown } } };
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: unknown, ...args: unknown[]) {
    counters.pgQueries++;
    return query.apply(this, args);
  };
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the driver instance the library uses
  const ioredis = require('ioredis') as { prototype: { sendCommand: (...args: unknown[]) => unknown } };
  const send = ioredis.prototype.sendCommand;
  ioredis.prototype.sendCommand = function (this: unknown, ...args: unknown[]) {
    counters.redisCommands++;
    return send.apply(this, args);
  };
}
countDriverCalls();

let recording = false;
const returnedAt = new Map<string, number>();
const storedAt = new Map<string, number>();
const syncArrivedAt = new Map<string, number>();

@lib.WebhookBot({ id: 'echo', name: 'Echo', accountId: BENCH_ACCOUNT })
class EchoBot extends lib.WebhookBotHost {
  async main(inputs: BotInputs): Promise<BotOutput[]> {
    return Object.entries(inputs).map(([title, v]) => ({ title, message: typeof v === 'string' ? v : JSON.stringify(v) }));
  }
}

@lib.WebhookBot({ id: 'short', name: 'Sleeps inputs.ms', accountId: BENCH_ACCOUNT })
class ShortBot extends lib.WebhookBotHost {
  async main(inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    const ms = Number(inputs.ms ?? 0);
    await new Promise((r) => setTimeout(r, ms));
    if (recording) returnedAt.set(ctx.invocationId, now());
    return [{ title: 'slept', message: String(ms) }];
  }
}

@Module({})
class ClusterNodeModule {
  static configure(config: NestClusterConfig): DynamicModule {
    return {
      module: ClusterNodeModule,
      imports: [
        lib.WebhookTriggerModule.forRoot({
          database: { type: 'postgres', url: config.databaseUrl },
          role: config.role,
          rateLimits: UNTHROTTLED,
          syncTimeoutMs: 600_000,
          // The wake-up measurement's callback receiver listens on 127.0.0.1 in the orchestrator.
          callbackAllowedHosts: ['127.0.0.1'],
          ...(config.stack === 'local'
            ? {}
            : {
                redis: { url: config.redisUrl, keyPrefix: config.keyPrefix },
                runner: redisLib.BullMqBotRunner,
                rateLimitStorage: redisLib.RedisRateLimitStorage,
                ...(config.bus === 'redis' ? { clusterBus: redisLib.RedisClusterBus } : {}),
              }),
        }),
      ],
      providers: [EchoBot, ShortBot],
    };
  }
}

async function main(): Promise<void> {
  const config = childConfig<NestClusterConfig>();
  dieOnUnhandled(`nest-cluster:${config.role}`);
  const module = ClusterNodeModule.configure(config);
  const logger = { logger: ['error', 'warn'] as Array<'error' | 'warn'> };

  let ctx: INestApplicationContext;
  let port = 0;
  if (config.role === 'worker') {
    ctx = await NestFactory.createApplicationContext(module, logger);
  } else {
    const app =
      config.adapter === 'fastify'
        ? await NestFactory.create<INestApplication<Server>>(module, new FastifyAdapter(), logger)
        : await NestFactory.create<INestApplication<Server>>(module, logger);
    await app.listen(0, '127.0.0.1');
    app.getHttpServer().on('request', (req: IncomingMessage) => {
      if (!recording) return;
      const match = /\/invocation\/([^/?#]+)\/sync/.exec(req.url ?? '');
      if (match) syncArrivedAt.set(match[1], now());
    });
    port = (app.getHttpServer().address() as AddressInfo).port;
    ctx = app;
  }

  // The moment "run finished" is published is right after the outcome was committed: on the worker
  // (or the `all` node) that ran it. Wrapping the instance the executor calls adds no work when off.
  const bus = ctx.get<ClusterBus>(lib.ClusterBus);
  const publish = bus.publish.bind(bus);
  bus.publish = (invocationId: string) => {
    if (recording) storedAt.set(invocationId, now());
    return publish(invocationId);
  };

  let triggers: Record<string, TriggerRef> | undefined;
  if (config.seed) {
    const admin = ctx.get(lib.WebhookTriggersAdmin);
    await admin.setCredits(BENCH_ACCOUNT, 1_000_000_000_000);
    const echo = await admin.createTrigger('echo', { name: 'bench echo' });
    const short = await admin.createTrigger('short', { name: 'bench short' });
    triggers = { echo: { id: echo.id, key: echo.key }, short: { id: short.id, key: short.key } };
  }

  serveRpc({
    /** Driver calls so far and this process's CPU time (µs), for per-run figures over a window. */
    counters: () => ({ ...counters, cpu: process.cpuUsage() }),
    record: ({ on }: { on: boolean }) => {
      recording = on;
      return null;
    },
    /** Per-run times recorded since the last call (and forgotten). */
    times: () => {
      const out = {
        returnedAt: Object.fromEntries(returnedAt),
        storedAt: Object.fromEntries(storedAt),
        syncArrivedAt: Object.fromEntries(syncArrivedAt),
      };
      returnedAt.clear();
      storedAt.clear();
      syncArrivedAt.clear();
      return out;
    },
  });
  announceReady({ port, ...(triggers ? { triggers } : {}) });
}

void main().catch((e: unknown) => {
  process.stderr.write(`[nest-cluster] failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
