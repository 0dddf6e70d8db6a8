import type { DynamicModule, INestApplication, INestApplicationContext, Provider, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import { WebhookTriggerModule, type WebhookTriggerModuleOptions } from '../../src/index.js';
import { BullMqBotRunner, RedisClusterBus, RedisRateLimitStorage } from '../../src/redis/index.js';
import { createScratchDatabase, deleteRedisKeys } from './services.js';

export interface ApiNode {
  app: INestApplication;
  /** e.g. `http://127.0.0.1:43123` */
  url: string;
  close(): Promise<void>;
}

export interface WorkerNode {
  /** An application context, no HTTP server, as `npm run start:worker` starts it. */
  ctx: INestApplicationContext;
  close(): Promise<void>;
}

/**
 * API nodes and BullMQ workers in one Jest process, on one scratch PostgreSQL database and a Redis key
 * prefix of their own (`BullMqBotRunner`, `RedisClusterBus`, `RedisRateLimitStorage`). `close()` stops
 * every node still open, drops the database and deletes the prefix's keys.
 */
export class BullMqCluster {
  private readonly closers: Array<() => Promise<void>> = [];

  private constructor(
    readonly redisUrl: string,
    readonly dbUrl: string,
    /** Fresh per cluster, so its queue, channel, limits and slots are its own. */
    readonly keyPrefix: string,
    private readonly dropDb: () => Promise<void>,
    private readonly providers: Provider[],
    private readonly options: WebhookTriggerModuleOptions,
    private readonly imports: Array<Type | DynamicModule>,
  ) {}

  /** `options` apply to every node (a node's own options go over them). */
  static async create(
    redisUrl: string,
    postgresUrl: string,
    setup: { providers: Provider[]; options?: WebhookTriggerModuleOptions; imports?: Array<Type | DynamicModule> },
  ): Promise<BullMqCluster> {
    const db = await createScratchDatabase(postgresUrl);
    const keyPrefix = `webhook-test-${randomBytes(6).toString('hex')}:`;
    return new BullMqCluster(redisUrl, db.url, keyPrefix, db.drop, setup.providers, setup.options ?? {}, setup.imports ?? []);
  }

  private moduleFor(options: WebhookTriggerModuleOptions) {
    return Test.createTestingModule({
      imports: [
        WebhookTriggerModule.forRoot({
          database: { type: 'postgres', url: this.dbUrl },
          redis: { url: this.redisUrl, keyPrefix: this.keyPrefix },
          rateLimits: { perTrigger: { limit: 10_000, ttlMs: 1000 }, perAccount: { limit: 10_000, ttlMs: 60_000 } },
          ...this.options,
          ...options,
          runner: BullMqBotRunner,
          clusterBus: RedisClusterBus,
          rateLimitStorage: RedisRateLimitStorage,
        }),
        ...this.imports,
      ],
      providers: this.providers,
    }).compile();
  }

  private closeOnce(close: () => Promise<void>): () => Promise<void> {
    let closing: Promise<void> | undefined;
    const once = () => (closing ??= close());
    this.closers.push(once);
    return once;
  }

  /** An HTTP node (`role: 'api'` unless told). */
  async startApi(options: WebhookTriggerModuleOptions = {}): Promise<ApiNode> {
    const app = (await this.moduleFor({ role: 'api', ...options })).createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const close = this.closeOnce(() => app.close());
    return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1'), close };
  }

  /** A worker (`role: 'worker'`). */
  async startWorker(options: WebhookTriggerModuleOptions = {}): Promise<WorkerNode> {
    const moduleRef = await this.moduleFor({ role: 'worker', ...options });
    moduleRef.useLogger(false);
    const ctx = await moduleRef.init();
    return { ctx, close: this.closeOnce(() => ctx.close()) };
  }

  async close(): Promise<void> {
    for (const close of [...this.closers].reverse()) await close().catch(() => undefined);
    await this.dropDb();
    // The queue's own keys (id counter, meta, events stream) stay after its jobs are gone: remove them.
    await deleteRedisKeys(this.redisUrl, this.keyPrefix);
  }
}
