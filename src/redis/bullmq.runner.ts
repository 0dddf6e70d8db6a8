import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Job, Queue, Worker } from 'bullmq';
import type { Redis as RedisClient } from 'ioredis';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { InterruptedRuns } from '../lifecycle/interrupted-runs.js';
import { InvocationExecutor } from '../runs/invocation.executor.js';
import { ShutdownState } from '../lifecycle/shutdown.state.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import { createRedisClient, redactRedisUrl } from './ioredis.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { CANNOT_CONNECT } from '../errors/webhook-trigger.messages.js';
import { BotRunner, type DispatchedRun } from '../runs/bot-runner.js';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import { AccountRunSlots } from './account-run-slots.js';
import { AccountQueuePositions } from './account-queue-positions.js';
import { Batcher } from '../batching/batcher.js';
import { WorkerHeartbeats } from './worker-heartbeats.js';
import { RunQueueBacklog } from './run-queue-backlog.js';
import {
  ENQUEUE_BATCH,
  ENQUEUE_TIMEOUT_MS,
  HAND_OFF_TRIES,
  SWEEP_BATCH,
  countedJobs,
  inJobTraceContext,
  jobAccount,
  sweptJobs,
  WEBHOOK_RUN_QUEUE,
  loadBullMq,
  refusedDelay,
} from './bullmq-run-queue.js';

/**
 * Runs bots on BullMQ workers, so API nodes and worker processes can be separate machines sharing one
 * PostgreSQL and one Redis. Choose it with the `runner` extra and the `redis` option:
 *
 * ```ts
 * WebhookTriggerModule.forRoot({ database: { type: 'postgres', url }, redis: { url: REDIS_URL }, role: 'api' | 'worker' | 'all',
 *   runner: BullMqBotRunner, clusterBus: RedisClusterBus, rateLimitStorage: RedisRateLimitStorage })
 * ```
 *
 * - **Dispatch** adds a job whose id IS the invocation id, after the row committed; the dispatches of one
 *   event-loop turn, and those arriving while a batch is in flight, go as one `addBulk` (one round trip).
 *   BullMQ ignores a job id it already holds, and the executor's claim (`queued → running`) ignores a run
 *   that is not queued, so a repeated dispatch is a no-op. If Redis does not answer (at once when it is
 *   down, within 2 s when it is silent), dispatch logs and returns: the run is stored, charged and
 *   answered 200 anyway, and stays `queued` until a sweep dispatches it.
 * - **Sweeps** (in `'all'`/`'worker'` processes every third of `runLeaseMs`, and in every process as soon
 *   as its Redis connection is back) re-dispatch runs `queued` for longer than `runLeaseMs` (15 s by
 *   default, so such a run starts 15–20 s late): runs whose enqueue failed, or whose API node died between
 *   commit and enqueue (its client got no answer; a retry with the same `Idempotency-Key` gets the run).
 * - **Workers** (`role` `'all'` or `'worker'`) process `maxConcurrentRuns` jobs at once. BullMQ's lock on
 *   a job lasts `runLeaseMs` and is renewed while the worker's event loop runs, however long the bot
 *   takes, so a slow worker is never taken for a dead one. When a worker dies, another worker's stalled
 *   check hands the job out again; that worker sees the run still `running` under the dead owner and
 *   settles it the way the bot chose (`InterruptedRuns`): a `retryInterrupted` bot runs again right there,
 *   any other run is stored `failed` ("interrupted"). The run lease is the backstop for runs whose job
 *   is gone. The account was charged once, at accept; nothing here charges.
 * - **Fair share** (`AccountQueuePositions`): each job's BullMQ priority is the number of its account's
 *   runs pending (enqueued, not ended) before it, + 1, so the queue interleaves accounts: an account alone
 *   uses every slot of every worker; another account's first run goes ahead of a deep backlog and starts
 *   as soon as any worker frees a slot; accounts with deep backlogs alternate. The job carries its account.
 * - **Hard cap** (only with `maxConcurrentRunsPerAccount`): before a worker runs a bot it takes a slot of
 *   the run's account (read from the row) in Redis (`AccountRunSlots`): at most that many across all
 *   workers together. A job refused a slot goes back to the queue as a delayed job, without holding a
 *   worker slot, and the run stays `queued`; it is listed as waiting, and the worker whose run frees a
 *   slot of that account brings the oldest waiting job forward at once. Slots are freed when runs end,
 *   and expire by themselves `runLeaseMs` after their worker stopped refreshing them (it died or lost
 *   Redis); the delay (200 ms, plus 5 ms per waiting run, at most 60 s) is the safety net.
 * - **Backlog** (`maxQueuedRuns`, `RunQueueBacklog`): the queue's waiting, prioritized and delayed jobs, read from Redis
 *   every 250 ms, plus the jobs this node added since the read. No trigger waits on Redis for it; the bound holds per queue
 *   and may be overshot by what the other API nodes accept within one read's interval. When the bots belong to more
 *   than one account, each account's waiting runs are read in the same turn (`backlogOf`, its share of the bound).
 * - **Cancel** of a run executing on a worker reaches it through the cluster bus (use the Redis bus): the executor
 *   fires the bot's signal when someone else finishes its run. **Heartbeats**: see `WorkerHeartbeats`.
 * - **Shutdown**: the worker stops taking jobs when shutdown begins; a job handed to it after that goes
 *   back to the queue at once for another worker; runs in flight get `shutdownGraceMs` (see `GracefulShutdown`), then the connections close.
 */
@Injectable()
export class BullMqBotRunner extends BotRunner implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(LOG_CONTEXT);
  private readonly bull = loadBullMq();
  private readonly url: string;
  private readonly prefix: string;
  private producer?: RedisClient;
  private queue?: Queue;
  private workerConnection?: RedisClient;
  private worker?: Worker;
  private sweeping = false;
  /** Dispatches of one turn, and those made while a batch is in flight, go to Redis as ONE `addBulk` (see `enqueue`). */
  private readonly enqueues = new Batcher<DispatchedRun, void>((runs) => this.enqueue(runs), ENQUEUE_BATCH);
  private positions?: AccountQueuePositions;
  /** Only with `maxConcurrentRunsPerAccount` (a hard cap across workers). */
  private slots?: AccountRunSlots;
  private slotRefresh?: NodeJS.Timeout;
  private heartbeats?: WorkerHeartbeats;
  /** What `maxQueuedRuns` bounds; its reads of the queue and this runner's adds take turns. */
  private readonly queueBacklog = new RunQueueBacklog(() => this.queue!.getJobCountByTypes('waiting', 'prioritized', 'delayed'));

  constructor(
    private readonly executor: InvocationExecutor,
    private readonly invocations: InvocationRepository,
    private readonly interrupted: InterruptedRuns,
    private readonly shutdown: ShutdownState,
    private readonly registry: WebhookBotRegistry,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {
    super();
    const redis = options.redis!; // checked at bootstrap (requiresRedis)
    this.url = redis.url;
    // BullMQ joins prefix and queue name with ':' itself.
    this.prefix = redis.keyPrefix.replace(/:+$/, '') || 'webhook-triggers';
  }

  /** Connects the producer, so an unreachable Redis at startup stops the app with a clear message. */
  async onModuleInit(): Promise<void> {
    this.producer = createRedisClient('BullMqBotRunner', this.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: ENQUEUE_TIMEOUT_MS,
      connectionName: 'webhook-triggers:queue',
    });
    let wasDown = false;
    this.producer.on('error', (error: Error) => {
      if (!wasDown) this.logger.warn(`Redis (run queue) unreachable: ${error.message}; accepted runs stay queued until it is back`);
      wasDown = true;
    });
    this.producer.on('ready', () => {
      if (!wasDown) return;
      wasDown = false;
      this.logger.log('Redis (run queue) is back; dispatching runs that could not be enqueued');
      void this.sweep(new Date());
    });
    try {
      await this.producer.connect();
    } catch (error) {
      this.producer.disconnect();
      throw new WebhookConfigurationError(CANNOT_CONNECT('BullMqBotRunner', redactRedisUrl(this.url), (error as Error).message));
    }
    this.queue = new this.bull.Queue(WEBHOOK_RUN_QUEUE, {
      connection: this.producer,
      prefix: this.prefix,
      // The job is only a pointer to the row; once done it can go, which also frees its id for a re-dispatch.
      defaultJobOptions: { removeOnComplete: true, removeOnFail: true, attempts: 1 },
    });
    this.queue.on('error', () => undefined); // reported by the producer's own listener above
    const keyPrefix = this.options.redis!.keyPrefix;
    this.positions = new AccountQueuePositions(this.producer, keyPrefix, this.logger);
    this.heartbeats = new WorkerHeartbeats(this.producer, keyPrefix);
    const cap = this.options.maxConcurrentRunsPerAccount;
    if (cap !== undefined) this.slots = new AccountRunSlots(this.producer, keyPrefix, cap, this.options.runLeaseMs, this.logger);
  }

  /**
   * Starts the backlog's reads once the bots are known (their accounts decide what is read), before the first
   * trigger; then the worker, once every module is ready (the executor needs bots and the database).
   */
  async onApplicationBootstrap(): Promise<void> {
    if (this.options.maxQueuedRuns > 0) await this.queueBacklog.start(this.waitingOfAccounts());
    if (this.options.role === 'api') return;
    this.workerConnection = createRedisClient('BullMqBotRunner', this.url, {
      maxRetriesPerRequest: null,
      connectionName: 'webhook-triggers:worker',
    });
    this.workerConnection.on('error', (error: Error) => this.logger.warn(`Redis (run worker): ${error.message}`));
    this.worker = new this.bull.Worker(WEBHOOK_RUN_QUEUE, inJobTraceContext(this.process.bind(this)), {
      connection: this.workerConnection,
      prefix: this.prefix,
      concurrency: this.options.maxConcurrentRuns,
      lockDuration: this.options.runLeaseMs,
      stalledInterval: this.options.runLeaseMs,
      // A job whose worker died is handed out again however often: the run's own bounds decide what happens to it
      // (InterruptedRuns, maxRunAttempts), and so it always reaches process(), which takes it off its account's runs
      // pending. BullMQ's default (1) failed a job stalled twice without handing it to anyone.
      maxStalledCount: Number.MAX_SAFE_INTEGER,
      autorun: false,
    });
    this.worker.on('error', (error: Error) => this.logger.warn(`Run worker: ${error.message}`));
    void this.worker.run().catch((error: unknown) => this.logger.error(`Run worker stopped: ${String(error)}`));
    await this.worker.waitUntilReady();
    // Not on ShutdownState.every: the slots of runs finishing within the shutdown grace must stay fresh too.
    if (this.slots) {
      const slots = this.slots;
      this.slotRefresh = setInterval(() => void slots.refresh(), Math.max(50, Math.floor(this.options.runLeaseMs / 3)));
      this.slotRefresh.unref();
    }
    this.heartbeats!.start(this.executor.owner, this.shutdown.signal);
    // Stop taking jobs as soon as shutdown begins; the jobs in flight finish within the grace.
    this.shutdown.signal.addEventListener('abort', () => void this.worker?.close().catch(() => undefined), { once: true });
    this.shutdown.every(Math.max(50, Math.floor(this.options.runLeaseMs / 3)), () =>
      this.sweep(new Date(Date.now() - this.options.runLeaseMs)),
    );
  }

  /** The health probes': the queue's Redis (a PING on the producer), and workers that beat within 30 s (`WorkerHeartbeats`). */
  override serviceChecks() {
    return [{ service: 'redis', part: 'BullMqBotRunner', ping: () => this.producer!.ping() }];
  }
  override workersSeen() {
    return this.heartbeats!.seen();
  }

  /** The queue survives this process and runs execute on workers; the sweep finds runs that never reached it. */
  static override readonly durable = true;
  /** Read by the option checks: choosing this class requires the `redis` option. */
  static readonly requiresRedis = true;

  /**
   * Resolves once the run's job is in Redis, or once that failed (logged: the run stays queued for the
   * sweep); never rejects, so the trigger is answered 200 either way: the row and the charge are committed.
   */
  async dispatch(run: DispatchedRun): Promise<void> {
    this.queueBacklog.dispatched(run.accountId);
    return this.enqueues.push({ id: run.id, accountId: run.accountId, traceContext: run.traceContext });
  }

  /**
   * One `addBulk` for a batch of dispatches (the trigger requests whose commits ended together): one
   * pipeline of BullMQ's add scripts, one round trip instead of one per run, in its turn with the backlog's
   * reads. Never rejects: a batch that could not be added is logged and its runs stay queued for the sweep.
   */
  private enqueue(runs: DispatchedRun[]): Promise<void[]> {
    return this.queueBacklog.add(runs, () => this.addJobs(runs));
  }

  private async addJobs(runs: DispatchedRun[]): Promise<void[]> {
    const ids = runs.map((r) => r.id);
    try {
      // Each run's place in line: its account's runs pending before it (fair share, AccountQueuePositions).
      const priorities = await this.positions!.enqueued(runs);
      // The invocation id as job id, which BullMQ's add script ignores when it already holds that id; the
      // job's data is the account (with the trace context), counted as pending until the job ends (countedJobs).
      await this.queue!.addBulk(countedJobs(runs, priorities));
    } catch (error) {
      // A pipeline fails as a whole, though some of its jobs may be in: the sweep adds the others, and
      // re-adding those is a no-op. Redis down fails at once (no offline queue), a silent one after
      // ENQUEUE_TIMEOUT_MS (the producer's command timeout).
      const runs = ids.length === 1 ? `Run ${ids[0]}` : `${ids.length} runs (${ids[0]}, …)`;
      this.logger.warn(
        `${runs} could not be enqueued (${(error as Error).message}); stored queued, dispatched by a sweep once Redis answers`,
      );
    }
    // Done either way: the backlog's next read sees these jobs (a failed batch's runs come back through the sweep).
    return ids.map(() => undefined);
  }

  /** The queue's waiting and delayed jobs at the last read, plus this node's jobs that read could not see (`RunQueueBacklog`). */
  override backlog(): number {
    return this.queueBacklog.current();
  }

  /** Of those, the account's waiting runs, across all nodes (see `waitingOfAccounts`); 0 when the bots belong to one account. */
  override backlogOf(accountId: string): number {
    return this.queueBacklog.currentOf(accountId);
  }

  /**
   * The reader of each account's waiting runs for the backlog's reads, only where a share applies: the bots belong
   * to several accounts and this node accepts triggers (an app of one account reads nothing more and adds no command
   * per run). Why this way: Redis already counts each account's runs pending (enqueued, not ended) for fair share;
   * less its jobs workers hold (the active list) they are its waiting ones, read by one script in the queue count's
   * turn, never per trigger or run. Its work grows with the jobs active, which the workers' slots bound; reading the
   * waiting jobs instead grows with the backlog (up to `maxQueuedRuns` a read), and counting starts on the workers
   * costs a command per turn of starts. Error, per account: the other nodes' enqueues of one read's interval (250 ms)
   * are missed, as for the whole bound; a dead worker's jobs count as held until BullMQ hands them out again
   * (`runLeaseMs`); an end whose report Redis failed counts as waiting until it is sent again; a run whose enqueue
   * failed before Redis counted it is not counted once swept. Each account's count is capped by the queue's waiting
   * jobs, so a count left too high never refuses an account while the queue holds less.
   */
  private waitingOfAccounts(): (() => Promise<Map<string, number>>) | undefined {
    if (!this.registry.manyAccounts || this.options.role === 'worker') return undefined;
    const accounts = [...new Set(this.registry.list().map((bot) => bot.accountId))];
    const queue = { active: this.queue!.keys.active, jobPrefix: this.queue!.toKey('') };
    return () => this.positions!.waiting(accounts, queue);
  }

  /** Re-dispatches runs still `queued` that were created before `createdBefore`; repeats are no-ops. */
  async sweep(createdBefore: Date): Promise<number> {
    if (this.sweeping || this.shutdown.isShuttingDown) return 0;
    this.sweeping = true;
    try {
      const runs = await this.invocations.listQueued(SWEEP_BATCH, createdBefore);
      // Not counted as pending (most of them may be in the queue already, where this add keeps the job as it is). A run
      // that really was missing is already late (its enqueue failed): first in line, so a steady load never starves it.
      if (runs.length > 0) {
        await this.queue!.addBulk(sweptJobs(runs));
      }
      return runs.length;
    } catch (error) {
      this.logger.warn(`Sweep of queued runs failed (${(error as Error).message}); retrying on the next one`);
      return 0;
    } finally {
      this.sweeping = false;
    }
  }

  private async process(job: Job, token?: string): Promise<void> {
    if (this.shutdown.isShuttingDown) {
      // Not started here: back to the queue for another worker, not into this process's grace.
      await job.moveToWait(token);
      throw new this.bull.WaitingError();
    }
    let delayed = false;
    try {
      delayed = !(await this.runJob(job, token));
    } finally {
      // However it ended (a job that failed has ended too), and whether or not its run was counted (a swept job's was
      // if its add failed after the count). Jobs of an older version carry no account: never counted. Before BullMQ
      // completes the job: a worker that dies first leaves it to the next, which reports the end again.
      const accountId = jobAccount(job.data);
      if (!delayed && accountId) await this.positions!.runEnded(accountId, job.id!);
    }
    if (delayed) throw new this.bull.DelayedError();
  }

  /** Runs the job's invocation if it is queued; false when the job was moved back to delayed (it has not ended). */
  private async runJob(job: Job, token?: string): Promise<boolean> {
    const invocationId = job.id!;
    // The row is read first only when it may be running under a dead owner, or a cap needs its account;
    // otherwise the executor's conditional claim is the only check (a run that is not queued is skipped).
    if (job.stalledCounter === 0 && !this.slots) {
      await this.executor.execute(invocationId);
      return true;
    }
    const run = await this.invocations.findById(invocationId);
    if (!run) return true;
    let status = run.status;
    if (job.stalledCounter > 0 && status === 'running' && run.owner && run.owner !== this.executor.owner) {
      // BullMQ handed this job out again because the worker holding it stopped renewing its lock.
      if ((await this.interrupted.settle(run, { owner: run.owner })) === 'requeued') status = 'queued';
    }
    const slots = this.slots;
    if (status !== 'queued') {
      // Finished, cancelled while it waited, or running elsewhere: nothing to run, no slot to take. If it
      // was brought forward for a free slot, the slot goes to the next waiting run instead.
      if (slots) await this.handOff(run.accountId, await slots.forget(run.accountId, invocationId));
      return true;
    }
    if (!slots) {
      await this.executor.execute(invocationId);
      return true;
    }
    const slot = await slots.take(run.accountId, invocationId);
    if (!slot.taken) {
      // The account's runs hold all of its slots: back to the queue, without holding a worker slot, until
      // a slot frees (then a hand-off brings it forward) or, failing that, its delay ends.
      await job.moveToDelayed(Date.now() + refusedDelay(slot.waiting), token);
      return false;
    }
    try {
      await this.executor.execute(invocationId);
    } finally {
      await this.handOff(run.accountId, await slots.release(run.accountId, invocationId));
    }
    return true;
  }

  /**
   * Brings the job of `next` (a waiting run taken off its account's list for a free slot) forward, from
   * delayed to waiting; if it cannot (it is being refused this moment, or is gone), the next one.
   */
  private async handOff(accountId: string, next: string | null): Promise<void> {
    for (let tries = 0; next && tries < HAND_OFF_TRIES; tries++) {
      try {
        const job = await this.queue!.getJob(next);
        if (job) return await job.promote();
      } catch {
        // Not delayed (yet): it is being refused right now and comes back by its delay.
      }
      next = await this.slots!.nextWaiting(accountId);
    }
  }

  /** After the grace (`GracefulShutdown` in onModuleDestroy): waits for the worker, then closes Redis. */
  async onApplicationShutdown(): Promise<void> {
    // The same promise as the close begun with shutdown, if it was.
    await this.worker?.close().catch(() => undefined);
    clearInterval(this.slotRefresh);
    this.queueBacklog.stop();
    await this.queue?.close().catch(() => undefined);
    this.workerConnection?.disconnect();
    this.producer?.disconnect();
  }
}
