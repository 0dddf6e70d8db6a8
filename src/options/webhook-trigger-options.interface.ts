/** One rate limit: at most `limit` requests in every window of `ttlMs` milliseconds. */
export interface WebhookRateLimit {
  /** Requests allowed per window. */
  limit: number;
  /** Window length in milliseconds. */
  ttlMs: number;
}

/** A database the module opens and owns (its entities and migrations are added for you). */
export type WebhookTriggerDatabaseOptions =
  | {
      type: 'better-sqlite3';
      /** File path, or `:memory:`. */
      database: string;
    }
  | {
      type: 'postgres';
      /** Connection URL, e.g. `postgres://user@127.0.0.1:5432/app`. */
      url: string;
    };

export interface WebhookTriggerModuleOptions {
  /**
   * How long `GET …/sync` waits for a run to finish before answering 408.
   * @default 300000 (5 minutes, as the spec says)
   */
  syncTimeoutMs?: number;
  /**
   * Rate limits, counted only for requests whose `X-Key` was valid.
   * @default { perTrigger: { limit: 10, ttlMs: 1000 }, perAccount: { limit: 100, ttlMs: 60000 } }
   */
  rateLimits?: {
    /** Requests per trigger. @default { limit: 10, ttlMs: 1000 } */
    perTrigger?: WebhookRateLimit;
    /** Requests per account that owns the trigger's bot. @default { limit: 100, ttlMs: 60000 } */
    perAccount?: WebhookRateLimit;
  };
  /**
   * Largest accepted trigger body in bytes; larger bodies get 413.
   * @default 1048576 (1 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Longest a trigger body may take to arrive once its request was authenticated; a slower one gets 408
   * and its connection is closed. @default 10000
   */
  bodyTimeoutMs?: number;
  /** Deepest nesting of arrays and objects accepted in a trigger body; deeper bodies get 400. @default 64 */
  maxJsonDepth?: number;
  /**
   * Largest total size of one run's outputs (JSON, in bytes); a bot that returns more fails its run
   * (`outputs_too_large`). History lists carry outputs up to a smaller bound and flag the rest as
   * truncated; a single run's view carries them whole. @default 1048576 (1 MiB)
   */
  maxOutputBytes?: number;
  /**
   * Most run event streams (`GET …/invocation/{id}/events`) open at once in this process; one more is
   * answered 503. @default 1000
   */
  maxEventStreams?: number;
  /**
   * Most run event streams open at once in this process on one trigger (one key holder); one more is
   * answered 429 with Retry-After, so one key cannot take the process's `maxEventStreams` from the others.
   * @default 100
   */
  maxEventStreamsPerTrigger?: number;
  /**
   * Most run event streams open at once in this process on the triggers of one account; one more is
   * answered 429 with Retry-After. @default 250
   */
  maxEventStreamsPerAccount?: number;
  /**
   * Most sync requests (`GET …/invocation/{id}/sync`) waiting at once in this process for an unfinished run; one
   * more is answered 503. @default 10000
   */
  maxSyncWaiters?: number;
  /**
   * Most sync requests waiting at once in this process on one trigger (one key holder); one more is answered 429
   * with Retry-After, so one key cannot take the process's `maxSyncWaiters` from the others. @default 1000
   */
  maxSyncWaitersPerTrigger?: number;
  /**
   * Most sync requests waiting at once in this process on the triggers of one account; one more is answered 429
   * with Retry-After. @default 2500
   */
  maxSyncWaitersPerAccount?: number;
  /**
   * Secret used to encrypt trigger keys at rest (AES-256-GCM) so that `view` can show a key again.
   * Any string of at least 16 characters; without it keys are stored as hashes only and can be shown
   * once, at creation or rotation.
   * @default undefined
   */
  keySecret?: string;
  /**
   * A database the module opens, migrates and closes itself. Not allowed together with the
   * `dataSourceName` extra (the host's DataSource).
   * @default { type: 'better-sqlite3', database: 'webhook-triggers.sqlite' }
   */
  database?: WebhookTriggerDatabaseOptions;
  /**
   * Run the shipped migrations on the module's own database (`database`) at startup. Set to false if
   * you run them with your own tooling. Not allowed with `dataSourceName`: your DataSource runs
   * `WEBHOOK_TRIGGER_MIGRATIONS` itself.
   * @default true
   */
  migrationsRun?: boolean;
  /**
   * Account charged for runs of bots that do not name one in `@WebhookBot({ accountId })`.
   * @default 'default'
   */
  defaultAccountId?: string;
  /**
   * Base of the trigger URLs the admin screens, the admin API and `WebhookTriggersAdmin` show (e.g.
   * `https://api.example.com`), for a host behind a proxy whose public address the request does not carry.
   * Unset, the admin screens and API build it from the request that views them (its Host, and the
   * forwarded protocol and host when your adapter trusts the proxy), and code that calls the service
   * directly gets this app's own address (`http://localhost:<port it listens on>`).
   * @default undefined
   */
  publicBaseUrl?: string;
  /**
   * Bots executing `main()` at once in this process. An account alone may use every slot; when several
   * accounts have runs waiting, a freed slot goes to the account executing the fewest (ties in turn).
   * Storing a run's claim and outcome does not hold a slot. @default 64
   */
  maxConcurrentRuns?: number;
  /**
   * A hard cap on the runs of one account executing at once, for hosts that sell capacity per account. It
   * counts **per process** with the in-process runner and **across all workers together** with
   * `BullMqBotRunner`; the account's further runs wait `queued`. Unset, an account may use every free slot
   * (fair share still splits the slots between accounts that compete). @default undefined (no cap)
   */
  maxConcurrentRunsPerAccount?: number;
  /**
   * Most runs accepted and not yet started (`queued` and waiting for a slot): in this process with the
   * in-process runner, on the run queue (waiting and delayed jobs) with `BullMqBotRunner`. Past it a trigger
   * is answered 503 with `Retry-After`, before anything is stored or charged. `0` sets no bound.
   * @default 10000
   */
  maxQueuedRuns?: number;
  /**
   * Accounts to open at startup with these credits, when they do not exist yet (an existing balance is
   * never changed), e.g. `{ default: { credits: 100 } }` so the first trigger runs at once.
   * @default {}
   */
  accounts?: Record<string, { credits: number }>;
  /** How long an idempotency key is remembered. @default 86400000 (24 h) */
  idempotencyTtlMs?: number;
  /**
   * How long a process keeps a trigger it looked up, so trigger requests do not read the trigger's row each
   * time; 0 disables. Used only with a cluster bus that tells every process of key rotations and deletes
   * (`RedisClusterBus`): those drop the trigger everywhere at once, and this is the safety net for an
   * announcement lost while Redis was unreachable. With the in-process bus every request reads its trigger.
   * @default 30000
   */
  triggerCacheTtlMs?: number;
  /**
   * Longest a bot may run, for bots that do not set `@WebhookBot({ timeoutMs })`. Past it the run's
   * signal fires, the run ends `timed_out` and its concurrency slot is freed even if the bot ignores
   * the signal. @default 900000 (15 min)
   */
  botTimeoutMs?: number;
  /**
   * On shutdown, how long running bots may take to finish before they are aborted and stored `failed`
   * ("interrupted"). @default 10000
   */
  shutdownGraceMs?: number;
  /**
   * How long a process's claim on a running run lasts without renewal (renewed every third of it).
   * After a crash, runs whose lease expired are recovered; a live process's runs are never touched.
   * @default 15000
   */
  runLeaseMs?: number;
  /**
   * How many times a run of a `retryInterrupted` bot may start. A run whose process died (or hung past its
   * lease) on its last attempt is stored `failed` ("interrupted_too_often") instead of running again, and
   * its credits are kept, so a run that kills every worker it lands on stops. @default 3
   */
  maxRunAttempts?: number;
  /** Finished runs older than this many days are deleted at startup and then hourly (0 keeps them forever). @default 30 */
  historyRetentionDays?: number;
  /**
   * After a key (or a signing secret) is rotated, how long the ones it replaces keep working, so callers
   * can move to the new one without downtime; `0` ends them at once. Revoking a key ends it at once anyway.
   * @default 86400000 (24 h)
   */
  keyRotationGraceMs?: number;
  /** Audit log entries older than this many days are deleted at startup and then hourly (0 keeps them forever). @default 365 */
  auditRetentionDays?: number;
  /**
   * Failed key checks allowed per client IP (`request.ip`; configure your adapter's trust-proxy setting
   * behind a proxy) before further attempts get 429. @default { limit: 30, ttlMs: 60000 }
   */
  failedKeyLimit?: WebhookRateLimit;
  /**
   * Redis for the parts that must be shared by several processes (`RedisRateLimitStorage`,
   * `RedisClusterBus`, `BullMqBotRunner` from `nestjs-webhook-triggers/redis`, chosen with the
   * extras); required when one of them is chosen. Needs `ioredis@5`.
   * @default undefined (everything in process)
   */
  redis?: WebhookTriggerRedisOptions;
  /**
   * What this process does when runs execute on a queue (`BullMqBotRunner`):
   * - `'all'`: accepts triggers and executes runs;
   * - `'api'`: accepts triggers and answers status/sync/cancel, never executes a run (and does not poll
   *   for interrupted runs: the workers do);
   * - `'worker'`: executes runs from the queue, renews their leases and recovers interrupted ones. A
   *   worker is usually started with `NestFactory.createApplicationContext()` (no HTTP server).
   * The in-process runner needs `'all'` or `'worker'` (an `'api'` process would never run anything).
   * @default 'all'
   */
  role?: WebhookTriggerRole;
  /**
   * Hosts a trigger's callback may reach even when they are loopback or private (exact host names or IP
   * addresses, as written in the callback URL), e.g. `['127.0.0.1', 'localhost']` in development. Every other
   * callback only reaches public addresses (docs/callbacks.md). @default []
   */
  callbackAllowedHosts?: string[];
  /**
   * Delays in ms before each attempt of a callback delivery, counted from the previous failed attempt (the
   * first is the first attempt's, normally 0); each gets ±20% jitter, and a receiver's `Retry-After` is honoured.
   * A delivery gives up after the last. @default [0, 5000, 300000, 1800000, 7200000, 18000000, 36000000, 36000000] (Standard Webhooks)
   */
  callbackRetryScheduleMs?: number[];
  /** A callback is disabled after this many deliveries in a row used up their retry schedule. @default 5 */
  callbackDisableAfterFailures?: number;
  /** Longest a callback attempt may take (resolving, connecting, the answer). @default 15000 */
  callbackTimeoutMs?: number;
  /**
   * Let a host's global `ThrottlerGuard` (@nestjs/throttler) count the webhook routes too. By default the
   * routes skip every throttler the host registers, so the spec's own limits (`rateLimits`, answered with
   * its 429 body and Retry-After) are the only ones a caller meets. @default false
   */
  applyHostThrottler?: boolean;
}

/** See the `role` option. */
export type WebhookTriggerRole = 'all' | 'api' | 'worker';

export interface WebhookTriggerRedisOptions {
  /** e.g. `redis://127.0.0.1:6379`. */
  url: string;
  /** Prefix of every key and channel, so several apps can share one Redis. @default 'webhook-triggers:' */
  keyPrefix?: string;
}

/** Options after defaults and validation; what every part of the module reads. */
export interface ResolvedWebhookTriggerOptions extends Required<
  Omit<
    WebhookTriggerModuleOptions,
    | 'keySecret'
    | 'rateLimits'
    | 'failedKeyLimit'
    | 'redis'
    | 'accounts'
    | 'callbackAllowedHosts'
    | 'callbackRetryScheduleMs'
    | 'maxConcurrentRunsPerAccount'
    | 'publicBaseUrl'
  >
> {
  maxConcurrentRunsPerAccount: number | undefined;
  publicBaseUrl: string | undefined;
  accounts: Record<string, { credits: number }>;
  keySecret: string | undefined;
  rateLimits: { perTrigger: WebhookRateLimit; perAccount: WebhookRateLimit };
  failedKeyLimit: WebhookRateLimit;
  redis: Required<WebhookTriggerRedisOptions> | undefined;
  callbackAllowedHosts: readonly string[];
  callbackRetryScheduleMs: readonly number[];
}
