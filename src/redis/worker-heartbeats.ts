import type { Redis as RedisClient } from 'ioredis';
import type { WorkersSeen } from '../runs/bot-runner.js';
import { REDIS_NOW_MS } from './redis-time.lua.js';

/** How often a worker says it is alive. */
const WORKER_HEARTBEAT_MS = 10_000;
/** A worker counts as seen while its last heartbeat is younger than this: three heartbeats. */
const WORKER_SEEN_WITHIN_MS = 3 * WORKER_HEARTBEAT_MS;

/**
 * Records this worker's heartbeat (score = Redis server ms) and drops those too old to count.
 * KEYS[1] the heartbeats; ARGV worker id, seen-within ms.
 */
const BEAT = `${REDIS_NOW_MS}
redis.call('ZADD', KEYS[1], string.format('%d', now), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now - tonumber(ARGV[2])))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 0
`;

/** Workers whose heartbeat is younger than ARGV[1] ms. KEYS[1] the heartbeats. */
const COUNT = `${REDIS_NOW_MS}
return redis.call('ZCOUNT', KEYS[1], string.format('(%d', now - tonumber(ARGV[1])), '+inf')
`;

/**
 * Which workers are alive, as the API nodes' health probes ask: each worker process beats every
 * `WORKER_HEARTBEAT_MS` into one sorted set per key prefix, on Redis time (nodes' clocks may differ), and
 * leaves it when it stops taking runs. A worker that died stops counting `WORKER_SEEN_WITHIN_MS` later.
 * (Not BullMQ's `getWorkers()`: it needs CLIENT LIST and CLIENT SETNAME, which some managed Redis refuse.)
 */
export class WorkerHeartbeats {
  private readonly key: string;
  private timer?: NodeJS.Timeout;
  private worker?: string;

  constructor(
    private readonly redis: RedisClient,
    keyPrefix: string,
  ) {
    this.key = `${keyPrefix}workers`;
  }

  /** Beats now and every `WORKER_HEARTBEAT_MS` as `worker` until `stop()` or `stopped` fires (shutdown begins). */
  start(worker: string, stopped: AbortSignal): void {
    this.worker = worker;
    stopped.addEventListener('abort', () => this.stop(), { once: true });
    this.beat();
    this.timer = setInterval(() => this.beat(), WORKER_HEARTBEAT_MS);
    this.timer.unref();
  }

  /** Stops beating and leaves the set, so API nodes stop counting this worker at once. */
  stop(): void {
    clearInterval(this.timer);
    if (this.worker) this.redis.zrem(this.key, this.worker).catch(() => undefined);
    this.worker = undefined;
  }

  /** A heartbeat lost while Redis is down is no news: the next one comes, and API nodes count it as missed. */
  private beat(): void {
    if (this.worker) this.redis.eval(BEAT, 1, this.key, this.worker, WORKER_SEEN_WITHIN_MS).catch(() => undefined);
  }

  /** Workers seen within `WORKER_SEEN_WITHIN_MS`. */
  async seen(): Promise<WorkersSeen> {
    return { workers: Number(await this.redis.eval(COUNT, 1, this.key, WORKER_SEEN_WITHIN_MS)), withinMs: WORKER_SEEN_WITHIN_MS };
  }
}
