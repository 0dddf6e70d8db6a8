import type { Logger } from '@nestjs/common';
import type { Redis as RedisClient } from 'ioredis';
import { Batcher } from '../batching/batcher.js';
import type { DispatchedRun } from '../runs/bot-runner.js';

/** BullMQ's highest job priority (`2 ** 21 - 1`); a lower number is fetched first. */
const MAX_JOB_PRIORITY = 2 ** 21 - 1;
/** Most ended runs one report takes off (more go in the next, right after). */
const ENDED_BATCH = 1000;
/** A report Redis failed is sent again this much later (taking a run off twice changes nothing), until it answers. */
const END_RETRY_MS = 1000;
/** Most ended runs kept for a report sent again; past it (Redis gone a long while) they heal when their account is idle. */
const END_RETRY_MAX = 10_000;

/**
 * Adds the runs `ARGV[2…]` (their ids) to the account's runs pending (KEYS[1], a set: a run dispatched again is one
 * member, however often its job was added), and sets it to expire `ARGV[1]` ms from now; answers how many were
 * pending before: one command per account and batch.
 */
const ENQUEUED = `
local before = redis.call('SCARD', KEYS[1])
redis.call('SADD', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return before
`;

/**
 * Takes the runs `ARGV[2…]` that ended off the account's runs pending (KEYS[1]); a run that is not a member (its end
 * reported already, or its job added uncounted) changes nothing. Redis deletes the set with its last member, so an
 * idle account leaves nothing behind; else it expires `ARGV[1]` ms from now: an account whose runs still end is not
 * idle, though it enqueued nothing for that long (its triggers refused past its share, or paused).
 */
const ENDED = `
redis.call('SREM', KEYS[1], unpack(ARGV, 2))
local left = redis.call('SCARD', KEYS[1])
if left > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return left
`;

/**
 * Each account's runs waiting: its runs pending minus those of them whose job workers hold now (the queue's active
 * list; a job's data is its account, or an object with it: `runJobData`). One call, whatever the number of accounts;
 * its work in Redis grows with the jobs active, which the workers' slots bound, never with the queue's backlog.
 * KEYS[1] the queue's active list, then each account's runs pending; ARGV[1] the prefix of the queue's job keys, then
 * the accounts in the order of their keys.
 */
const WAITING = `
local index = {}
for i = 2, #ARGV do index[ARGV[i]] = i end
local held = {}
for _, id in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local data = redis.call('HGET', ARGV[1] .. id, 'data')
  if data then
    local ok, decoded = pcall(cjson.decode, data)
    if ok and type(decoded) == 'table' then decoded = decoded.accountId end
    local i = ok and type(decoded) == 'string' and index[decoded]
    if i and redis.call('SISMEMBER', KEYS[i], id) == 1 then held[i] = (held[i] or 0) + 1 end
  end
end
local waiting = {}
for i = 2, #KEYS do
  waiting[i - 1] = redis.call('SCARD', KEYS[i]) - (held[i] or 0)
end
return waiting
`;

type PositionRedis = RedisClient & {
  webhookRunsEnqueued(key: string, ttlMs: number, ...runIds: string[]): Promise<number>;
  webhookRunsEnded(key: string, ttlMs: number, ...runIds: string[]): Promise<number>;
  webhookRunsWaiting(...keysThenArgs: (string | number)[]): Promise<number[]>;
};

/** Where the run queue keeps its jobs (BullMQ's keys): what `AccountQueuePositions.waiting` reads besides the counts. */
export interface RunQueueKeys {
  /** The list of the jobs workers hold. */
  active: string;
  /** A job's hash is this prefix and its id. */
  jobPrefix: string;
}

/**
 * How long an account's runs pending outlive its last enqueue or reported end. They order the queue and bound the
 * account's share of the backlog, so they must last while the account's runs wait (a count that expired under a
 * backlog let the account fill it again); a run left in them (Redis failed its end's report, and its worker died
 * before sending it again) costs that account its place in line (and some of its share), never a run; it goes once
 * the account has been idle (nothing enqueued, nothing ended) this long.
 */
const COUNT_TTL_MS = 10 * 60_000;

/**
 * Fair share across every worker, without a cap: each account's runs enqueued and not yet ended are kept in Redis
 * (`<keyPrefix>pending-runs:<accountId>`, a set of run ids), and a run is enqueued with BullMQ priority "runs of its
 * account pending before it, + 1". Workers fetch the lowest number first (ties in arrival order), so the queue
 * interleaves the accounts: an account's first run goes ahead of another account's deep backlog (it waits for one
 * slot to free, whichever worker frees it), two accounts with deep backlogs alternate, and an account alone still
 * gets every slot of every worker. This is start-time fair queueing with the account's backlog as its clock; it
 * costs one script call (SCARD, SADD, PEXPIRE) per account per enqueued batch, and one (SREM) per account per batch
 * of runs ended on a worker. Kept by run id, a run is pending once whatever happens to its job: added twice (a run
 * dispatched again), its add failed after it was counted (a sweep adds it later), its end reported twice.
 */
export class AccountQueuePositions {
  private readonly redis: PositionRedis;
  /** Runs ended on this worker: those of one turn, and those ended while a report is in flight, go in one report. */
  private readonly ends = new Batcher<{ accountId: string; runId: string }, void>((ended) => this.report(ended), ENDED_BATCH);
  /** Ended runs whose report Redis failed, waiting to be sent again. */
  private retrying = 0;

  constructor(
    redis: RedisClient,
    private readonly keyPrefix: string,
    private readonly logger: Logger,
  ) {
    this.redis = redis as PositionRedis;
    this.redis.defineCommand('webhookRunsEnqueued', { numberOfKeys: 1, lua: ENQUEUED });
    this.redis.defineCommand('webhookRunsEnded', { numberOfKeys: 1, lua: ENDED });
    this.redis.defineCommand('webhookRunsWaiting', { lua: WAITING });
  }

  /** The key of an account's runs enqueued and not ended (a set of run ids). */
  key(accountId: string): string {
    return `${this.keyPrefix}pending-runs:${accountId}`;
  }

  /**
   * Counts `runs` as enqueued and answers each one's priority, in order: one script call per account (sent
   * together). A run pending already (dispatched again) is not counted twice. An account whose count Redis does not
   * answer gets priorities from 1 for its runs (the enqueue that follows fails too when Redis is gone, and the sweep
   * enqueues them later, uncounted).
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
      accounts.map((accountId) =>
        this.redis.webhookRunsEnqueued(this.key(accountId), COUNT_TTL_MS, ...perAccount.get(accountId)!).then(Number, () => null),
      ),
    );
    // The position of the account's next run: its runs pending before this batch, + 1.
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
   * Of the accounts' runs pending, the ones waiting (not held by a worker), by account: one script call (`WAITING`).
   * A run's end is reported before its job leaves the active list, so it never counts as waiting; a run left pending
   * (its end's report failed, and is not sent again yet) counts until it goes (the caller bounds each by the queue's waiting jobs). Rejects
   * when Redis does not answer.
   */
  async waiting(accounts: readonly string[], queue: RunQueueKeys): Promise<Map<string, number>> {
    const keys = [queue.active, ...accounts.map((accountId) => this.key(accountId))];
    const waiting = await this.redis.webhookRunsWaiting(keys.length, ...keys, queue.jobPrefix, ...accounts);
    return new Map(accounts.map((accountId, i) => [accountId, Math.max(0, Number(waiting[i]))]));
  }

  /**
   * A run of `accountId` ended (however it ended): reported with the others of this turn; a repeat changes nothing.
   * Resolves once Redis answered that report (or failed it: logged, and sent again later), never rejects: a worker
   * awaits it before BullMQ completes the job, so a worker that dies before the report leaves the job to be handed
   * out again, and the worker it goes to reports its run's end again.
   */
  runEnded(accountId: string, runId: string): Promise<void> {
    return this.ends.push({ accountId, runId });
  }

  private async report(ended: { accountId: string; runId: string }[]): Promise<void[]> {
    const perAccount = new Map<string, string[]>();
    for (const { accountId, runId } of ended) {
      const ids = perAccount.get(accountId);
      if (ids) ids.push(runId);
      else perAccount.set(accountId, [runId]);
    }
    const accounts = [...perAccount];
    const results = await Promise.allSettled(
      accounts.map(([accountId, ids]) => this.redis.webhookRunsEnded(this.key(accountId), COUNT_TTL_MS, ...ids)),
    );
    const failed = accounts.filter((_, i) => results[i].status === 'rejected');
    if (failed.length > 0) {
      const reason = (results.find((result) => result.status === 'rejected') as PromiseRejectedResult).reason as Error;
      const again = this.retry(failed) ? `sent again in ${END_RETRY_MS} ms` : "too many to keep: their accounts' counts heal when idle";
      this.logger.debug(`Ended runs not counted (${reason.message}); ${again}`);
    }
    return ended.map(() => undefined);
  }

  /** Sends the ends of `failed` (account, run ids) again later; false when END_RETRY_MAX are waiting already. */
  private retry(failed: [string, string[]][]): boolean {
    const runs = failed.flatMap(([accountId, ids]) => ids.map((runId) => ({ accountId, runId })));
    if (this.retrying + runs.length > END_RETRY_MAX) return false;
    this.retrying += runs.length;
    setTimeout(() => {
      this.retrying -= runs.length;
      // Not once the runner closed its connection (shutdown): they heal when their accounts are idle.
      if (this.redis.status === 'end') return;
      for (const run of runs) void this.ends.push(run);
    }, END_RETRY_MS).unref();
    return true;
  }
}
