import type { Logger } from '@nestjs/common';
import type { Redis as RedisClient } from 'ioredis';
import { REDIS_NOW_MS } from './redis-time.lua.js';

/**
 * Takes a slot, atomically: drop slots whose expiry passed (their worker died or lost Redis); a run that
 * already holds one keeps it (refreshed); otherwise take one when fewer than `cap` are held. A run refused
 * is listed as waiting (oldest first; a run already listed keeps its place).
 * KEYS[1] the account's slots (member = invocation id, score = slot expiry in Redis server ms), KEYS[2]
 * its waiting runs (score = when first refused); ARGV lease ms, cap, invocation id, waiting list ttl ms.
 * Returns 0 taken, or the number of runs waiting (this one included) when refused.
 */
const TAKE = `${REDIS_NOW_MS}
local lease = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
if redis.call('ZSCORE', KEYS[1], ARGV[3]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], string.format('%d', now + lease), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], lease)
  redis.call('ZREM', KEYS[2], ARGV[3])
  return 0
end
redis.call('ZADD', KEYS[2], 'NX', string.format('%d', now), ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return redis.call('ZCARD', KEYS[2])
`;

/**
 * Frees a run's slot (ARGV[1], when not empty) and drops a run from the waiting list (ARGV[3], when not
 * empty), then, if the account has a free slot, takes the oldest waiting run off the list and answers
 * its id, for the caller to bring its job forward; else false.
 * KEYS as TAKE; ARGV invocation id or '', cap, invocation id or ''.
 */
const RELEASE = `${REDIS_NOW_MS}
if ARGV[1] ~= '' then redis.call('ZREM', KEYS[1], ARGV[1]) end
if ARGV[3] ~= '' then redis.call('ZREM', KEYS[2], ARGV[3]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return false end
local next = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if not next then return false end
redis.call('ZREM', KEYS[2], next)
return next
`;

/**
 * Pushes the expiry of slots still held (XX: a slot that expired or was released is not brought back,
 * so a refresh racing a release never leaves a phantom slot behind).
 * KEYS[1] the account's slots; ARGV lease ms, then the invocation ids.
 */
const REFRESH = `${REDIS_NOW_MS}
local lease = tonumber(ARGV[1])
local expiry = string.format('%d', now + lease)
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i])
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], lease)
end
return 0
`;

type SlotRedis = RedisClient & {
  webhookTakeRunSlot(
    slots: string,
    waiting: string,
    leaseMs: number,
    cap: number,
    invocationId: string,
    waitingTtlMs: number,
  ): Promise<number>;
  webhookReleaseRunSlot(slots: string, waiting: string, releasing: string, cap: number, forgetting: string): Promise<string | null>;
  webhookRefreshRunSlots(slots: string, leaseMs: number, ...invocationIds: string[]): Promise<number>;
};

/** What `take` answers. */
export type SlotAnswer = { taken: true } | { taken: false; waiting: number };

/** How long the waiting list outlives its last refusal; it only speeds hand-offs up, so losing it costs time, not runs. */
const WAITING_TTL_MS = 10 * 60_000;

/**
 * `maxConcurrentRunsPerAccount` across every worker: one sorted set per account in Redis
 * (`<keyPrefix>run-slots:<accountId>`), one member per run executing anywhere, scored with the time its
 * slot expires (Redis server time + `runLeaseMs`). A worker takes a slot before it runs a bot, refreshes
 * the slots of its runs every third of `runLeaseMs`, and removes them when the runs end, however they
 * end. A worker that dies stops refreshing, so its slots expire by themselves, like its run leases.
 * Runs refused a slot are listed oldest first (`<keyPrefix>run-waiting:<accountId>`), so that a freed
 * slot goes to the next of them at once. When Redis does not answer, runs go ahead without a slot
 * (availability over fairness), logged once.
 */
export class AccountRunSlots {
  private readonly redis: SlotRedis;
  /** Runs executing in this process that hold a slot: invocation id → account id. */
  private readonly held = new Map<string, string>();
  private unanswered = false;

  constructor(
    redis: RedisClient,
    private readonly keyPrefix: string,
    private readonly cap: number,
    private readonly leaseMs: number,
    private readonly logger: Logger,
  ) {
    this.redis = redis as SlotRedis;
    this.redis.defineCommand('webhookTakeRunSlot', { numberOfKeys: 2, lua: TAKE });
    this.redis.defineCommand('webhookReleaseRunSlot', { numberOfKeys: 2, lua: RELEASE });
    this.redis.defineCommand('webhookRefreshRunSlots', { numberOfKeys: 1, lua: REFRESH });
  }

  /** The sorted set of an account's slots. */
  key(accountId: string): string {
    return `${this.keyPrefix}run-slots:${accountId}`;
  }

  /** The sorted set of an account's runs waiting for a slot. */
  waitingKey(accountId: string): string {
    return `${this.keyPrefix}run-waiting:${accountId}`;
  }

  /** Taken (or Redis did not answer: go ahead), or refused with the number of the account's runs waiting. */
  async take(accountId: string, invocationId: string): Promise<SlotAnswer> {
    let waiting: number;
    try {
      waiting = Number(
        await this.redis.webhookTakeRunSlot(
          this.key(accountId),
          this.waitingKey(accountId),
          this.leaseMs,
          this.cap,
          invocationId,
          WAITING_TTL_MS,
        ),
      );
    } catch (error) {
      if (!this.unanswered) {
        this.logger.warn(
          `Redis did not answer for a run slot (${(error as Error).message}); runs start without the per-account limit until it answers`,
        );
      }
      this.unanswered = true;
      return { taken: true };
    }
    if (this.unanswered) this.logger.log('Redis answers for run slots again: the per-account limit holds again');
    this.unanswered = false;
    if (waiting > 0) return { taken: false, waiting };
    this.held.set(invocationId, accountId);
    return { taken: true };
  }

  /**
   * Frees the run's slot, and answers the account's oldest waiting run when a slot is free (taken off
   * the list: the caller brings its job forward), else null. Never throws: an unreleased slot expires
   * within `runLeaseMs`.
   */
  async release(accountId: string, invocationId: string): Promise<string | null> {
    this.held.delete(invocationId);
    return this.next(accountId, invocationId, '');
  }

  /**
   * Drops a run that will not start (finished or cancelled while it waited) from the waiting list, and
   * answers the next waiting run as `release` does (it may have been brought forward for a free slot).
   */
  forget(accountId: string, invocationId: string): Promise<string | null> {
    return this.next(accountId, '', invocationId);
  }

  /** The account's oldest waiting run, taken off the list, when it has a free slot; else null. */
  nextWaiting(accountId: string): Promise<string | null> {
    return this.next(accountId, '', '');
  }

  private async next(accountId: string, releasing: string, forgetting: string): Promise<string | null> {
    try {
      const next = await this.redis.webhookReleaseRunSlot(this.key(accountId), this.waitingKey(accountId), releasing, this.cap, forgetting);
      return next || null;
    } catch (error) {
      if (releasing) this.logger.debug(`Run slot of ${releasing} not released (${(error as Error).message}); it expires by itself`);
      return null;
    }
  }

  /** Keeps the slots of the runs executing here from expiring. */
  async refresh(): Promise<void> {
    if (this.held.size === 0) return;
    const byAccount = new Map<string, string[]>();
    for (const [invocationId, accountId] of this.held) {
      const ids = byAccount.get(accountId);
      if (ids) ids.push(invocationId);
      else byAccount.set(accountId, [invocationId]);
    }
    try {
      await Promise.all(
        [...byAccount].map(([accountId, ids]) => this.redis.webhookRefreshRunSlots(this.key(accountId), this.leaseMs, ...ids)),
      );
    } catch (error) {
      this.logger.debug(`Run slots not refreshed (${(error as Error).message}); retrying on the next tick`);
    }
  }
}
