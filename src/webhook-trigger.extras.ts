import type { Type } from '@nestjs/common';
import type { ClusterBus } from './cluster/cluster-bus.js';
import type { WebhookTriggerExtraName } from './options/resolve-options.js';
import type { WebhookStorage } from './persistence/webhook-storage.js';
import type { RateLimitStorage } from './rate-limits/rate-limit.storage.js';
import type { Clock } from './time/clock.js';
import type { CallbackTransport } from './callbacks/callback-transport.js';
import type { BotRunner } from './runs/bot-runner.js';

/**
 * Wiring decided when the module is imported (also on `forRootAsync`), because Nest must know which
 * classes to instantiate before any async options exist. Checked at bootstrap together with the options.
 */
export interface WebhookTriggerModuleExtras {
  /** Register the module globally. @default false */
  isGlobal?: boolean;
  /**
   * Add an `account` label to the run metrics (runs finished, run duration, queue wait, credits charged): one
   * series per account, so only when the accounts are few (docs/observability.md#metrics). @default false
   */
  metricsAccountLabels?: boolean;
  /**
   * Use the PostgreSQL DataSource your `TypeOrmModule.forRoot()` registered under this name (`'default'`
   * for the unnamed one) instead of opening one. It must list `WEBHOOK_TRIGGER_ENTITIES` in `entities` and
   * run `WEBHOOK_TRIGGER_MIGRATIONS`. A SQLite DataSource is refused: the module's SQLite writes need the
   * connection to themselves (use the `database` option instead).
   * @default undefined (the module opens its own database: see the `database` option)
   */
  dataSourceName?: string;
  /**
   * Replace where everything is kept (triggers, runs, credits, callbacks and deliveries, their unit of work and
   * the accept step), as a whole: a class extending `WebhookStorage` (bound with useClass), or an instance,
   * e.g. `new InMemoryWebhookStorage()` in tests. With it, the module opens no database.
   * @default the SQL storage on the module's DataSource (the `database` option, or `dataSourceName`)
   */
  storage?: Type<WebhookStorage> | WebhookStorage;
  /**
   * Replace where runs execute, e.g. `BullMqBotRunner` (from `nestjs-webhook-triggers/redis`; needs the
   * `redis` option and `bullmq`) to run bots on worker processes; see the `role` option.
   * @default InProcessBotRunner (in this process)
   */
  runner?: Type<BotRunner>;
  /**
   * Replace the cluster's message bus (finished runs for waiting sync requests, run changes, emitted outputs,
   * trigger changes), e.g. `RedisClusterBus`. @default InMemoryClusterBus
   */
  clusterBus?: Type<ClusterBus>;
  /**
   * Replace where rate limits are counted, e.g. `RedisRateLimitStorage` (needs the `redis` option) so the
   * limits hold across all API processes together. @default InMemoryRateLimitStorage (in process)
   */
  rateLimitStorage?: Type<RateLimitStorage>;
  /**
   * Where the module reads the time for what waits on it (key expiry and rotation grace, signed requests'
   * timestamps, the in-process rate-limit windows): an object with `now()` in ms since the epoch, e.g. a
   * test's clock it moves. @default the system clock (`Date.now()`)
   */
  clock?: Clock;
  /**
   * Replace how a callback attempt reaches its receiver: a class extending `CallbackTransport` or an instance,
   * e.g. the testing kit's, which captures deliveries instead of sending them. A transport of yours gets the
   * request with its signed headers and decides nothing about retries (the schedule is the module's).
   * @default HttpCallbackTransport (a POST, SSRF-safe: public addresses unless `callbackAllowedHosts`)
   */
  callbackTransport?: Type<CallbackTransport> | CallbackTransport;
}

// The checks in options/ know the extras by name only; the two lists must agree (a compile error otherwise,
// and nothing at run time).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type MustBeTrue<T extends true> = T;
export type ExtraNamesAgree = MustBeTrue<Same<keyof WebhookTriggerModuleExtras, WebhookTriggerExtraName>>;
