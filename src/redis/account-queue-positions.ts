import type { Logger } from '@nestjs/common';
import type { Redis as RedisClient } from 'ioredis';
import type { DispatchedRun } from '../runs/bot-runner.js';

/** BullMQ's highest job priority (`2 ** 21 - 1`); a lower number is fetched first. */
const MAX_JOB_PRIORITY = 2 ** 21 - 1;

/**
 * Adds `ARGV[1]` to the count (the runs enqueued), less the runs whose job the queue holds already (KEYS[2…], their
 * job hashes: a run dispatched again, whose add is a no-op and whose job ends once), and sets it to expire `ARGV[2]`
 * ms from now; answers the new count and how many were added: one command per account and batch. KEYS[1] the
 * account's count.
 */
const ENQUEUED = `
local added = tonumber(ARGV[1])
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then added = added - 1 end
end
local count = redis.call('INCRBY', KEYS[1], added)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {count, added}
`;

/**
 * Takes `ARGV[1]` from the count (the runs that ended), and deletes it at zero or below, so an idle
 * account leaves nothing behind; else it expires `ARGV[2]` ms from now: an account whose runs still end is
 * not idle, though it enqueued nothing for that long (its triggers refused past its share, or paused).
 * KEYS[1] the account's count.
 */
const ENDED = `
local left = redis.call('DECRBY', KEYS[1], ARGV[1])
if left <= 0 then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return left
`;

/**
 * Each account's runs waiting: its count (enqueued, not ended) minus its counted jobs that workers hold now (the
 * queue's active list; a job's data is its account, or an object with it: `runJobData`). One call, whatever the
 * number of accounts; its work in Redis grows with the jobs active, which the workers' slots bound, never with the
 * queue's backlog. KEYS[1] the queue's active list, then each account's count; ARGV[1] the prefix of the queue's
 * job keys, ARGV[2] the name of a counted job, then the accounts in the order of their keys.
 */
const WAITING = `
local held = {}
for _, id in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local job = redis.call('HMGET', ARGV[1] .. id, 'name', 'data')
  if job[1] == ARGV[2] and job[2] then
    local ok, data = pcall(cjson.decode, job[2])
    if ok and type(data) == 'table' then data = data.accountId end
    if ok and type(data) == 'string' then held[data] = (held[data] or 0) + 1 end
  end
end
local waiting = {}
for i = 2, #KEYS do
  waiting[i - 1] = (tonumber(redis.call('GET', KEYS[i])) or 0) - (held[ARGV[i + 1]] or 0)
end
return waiting
`;

type PositionRedis = RedisClient & {
  webhookRunsEnqueued(...keysThenArgs: (string | number)[]): Promise<[number, number]>;
  webhookRunsEnded(key: string, ended: number, ttlMs: number): Promise<number>;
  webhookRunsWaiting(...keysThenArgs: (string | number)[]): Promise<number[]>;
};

/** Where the run queue keeps its jobs (BullMQ's keys): what `AccountQueuePositions.waiting` reads besides the counts. */
export interface RunQueueKeys {
  /** The list of the jobs workers hold. */
  active: string;
  /** A job's hash is this prefix and its id. */
  jobPrefix: string;
  /** The name of the jobs counted in their account's runs pending (COUNTED_JOB). */
  countedJob: string;
}

/**
 * How long an account's count outlives its last enqueue or reported end. The count orders the queue and bounds
 * the account's share of the backlog, so it must last while the account's runs wait (a count that expired under a
 * backlog let the account fill it again); a count left too high (a worker that died between a run's end and its
 * report) costs that account its place in line (and some of its share), never a run; it heals once the account has
 * been idle (nothing enqueued, nothing ended) this long.
 */
const COUNT_TTL_MS = 10 * 60_000;

/**
 * Fair share across every worker, without a cap: each account's runs enqueued and not yet ended are
 * counted in Redis (`<keyPrefix>run-pending:<accountId>`), and a run is enqueued with BullMQ priority
 * "runs of its account pending before it, + 1". Workers fetch the lowest number first (ties in arrival
 * order), so the queue interleaves the accounts: an account's first run goes ahead of another account's
 * deep backlog (it waits for one slot to free, whichever worker frees it), two accounts with deep
 * backlogs alternate, and an account alone still gets every slot of every worker. This is start-time
 * fair queueing with the account's backlog as its clock; it costs one script call (INCRBY, PEXPIRE) per
 * account per enqueued batch, and one (DECRBY) per account per batch of runs ended on a worker.
 */
export class AccountQueuePositions {
  private readonly redis: PositionRedis;
  /** Runs ended on this worker per account, not yet reported (sent once per event-loop turn). */
  private ended = new Map<string, number>();
  private reporting = false;

  constructor(
    redis: RedisClient,
    private readonly keyPrefix: string,
    private readonly logger: Logger,
    /** The prefix of the queue's job keys (a job's hash is it and the run's id), when runs may be dispatched again while their job is in the queue. */
    private readonly jobPrefix?: string,
  ) {
    this.redis = redis as PositionRedis;
    this.redis.defineCommand('webhookRunsEnqueued', { lua: ENQUEUED });
    this.redis.defineCommand('webhookRunsEnded', { numberOfKeys: 1, lua: ENDED });
    this.redis.defineCommand('webhookRunsWaiting', { lua: WAITING });
  }

  /** The key of an account's count of runs enqueued and not ended. */
  key(accountId: string): string {
    return `${this.keyPrefix}run-pending:${accountId}`;
  }

  /**
   * Counts `runs` as enqueued and answers each one's priority, in order: one script call per account (sent
   * together). A run whose job the queue holds already (given `jobPrefix`) is not counted again: its add is a no-op. An account whose count Redis does not answer gets priorities from 1 for its runs (the enqueue
   * that follows fails too when Redis is gone, and the sweep enqueues them later, uncounted).
   */
  async enqueued(runs: readonly DispatchedRun[]): Promise<number[]> {
    const perAccount = new Map<string, string[]>();
    for (const run of runs) {
      const ids = perAccount.get(run.accountId);
      if (ids) ids.push(run.id);
      else perAccount.set(run.accountId, [run.id]);
    }
    const accounts = [...perAccount.keys()];
    const counts = await Promise.all(
      accounts.map((accountId) => {
        const ids = perAccount.get(accountId)!;
        const jobs = this.jobPrefix === undefined ? [] : ids.map((id) => this.jobPrefix + id);
        return this.redis.webhookRunsEnqueued(1 + jobs.length, this.key(accountId), ...jobs, ids.length, COUNT_TTL_MS).then(
          ([count, added]) => Number(count) - Number(added),
          () => null,
        );
      }),
    );
    // The position of the account's next run: the count before this batch, + 1.
    const next = new Map<string, number>();
    accounts.forEach((accountId, i) => {
      const before = counts[i];
      next.set(accountId, before === null ? 1 : before + 1);
    });
    return runs.map((run) => {
      const position = next.get(run.accountId)!;
      next.set(run.accountId, position + 1);
      return Math.min(MAX_JOB_PRIORITY, Math.max(1, position));
    });
  }

  /**
   * Of the accounts' counted runs, the ones waiting (pending and not held by a worker), by account: one script call
   * (`WAITING`). Runs whose job left the active list and whose end is not reported yet count as waiting for that
   * moment; a count left too high by a dead worker counts its runs until it heals (the caller bounds each by the
   * queue's waiting jobs). Rejects when Redis does not answer.
   */
  async waiting(accounts: readonly string[], queue: RunQueueKeys): Promise<Map<string, number>> {
    const keys = [queue.active, ...accounts.map((accountId) => this.key(accountId))];
    const waiting = await this.redis.webhookRunsWaiting(keys.length, ...keys, queue.jobPrefix, queue.countedJob, ...accounts);
    return new Map(accounts.map((accountId, i) => [accountId, Math.max(0, Number(waiting[i]))]));
  }

  /** A counted run ended (however it ended): reported with the others of this turn. Never throws. */
  runEnded(accountId: string): void {
    this.ended.set(accountId, (this.ended.get(accountId) ?? 0) + 1);
    if (this.reporting) return;
    this.reporting = true;
    setImmediate(() => void this.report());
  }

  private async report(): Promise<void> {
    const ended = this.ended;
    this.ended = new Map();
    try {
      await Promise.all([...ended].map(([accountId, n]) => this.redis.webhookRunsEnded(this.key(accountId), n, COUNT_TTL_MS)));
    } catch (error) {
      this.logger.debug(`Ended runs not counted (${(error as Error).message}); their accounts' counts heal when idle`);
    } finally {
      this.reporting = false;
      if (this.ended.size > 0) {
        this.reporting = true;
        setImmediate(() => void this.report());
      }
    }
  }
}
