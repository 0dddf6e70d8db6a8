import { BACKLOG_READ_MS } from './bullmq-run-queue.js';

/** This node's dispatches of one account, and how many of them a read of the queue has seen. */
interface OwnJobs {
  dispatched: number;
  enqueued: number;
  enqueuedAtRead: number;
}

/**
 * The run queue's backlog as `maxQueuedRuns` bounds it, answered from memory on every trigger: the queue's
 * waiting, prioritized and delayed jobs at the last read (from Redis every `BACKLOG_READ_MS`), plus the jobs
 * this node dispatched that the read could not see. Adds and reads take turns (one at a time; the Batcher
 * already sends one add batch at a time), so a read never overlaps an add: it counts exactly the jobs whose add
 * completed before it, and `current()` adds the ones dispatched since. This node's own jobs always count at once
 * and never twice. When Redis does not answer, the last read stands and this node's own additions still
 * count, so a node cut off from its queue stops accepting at the bound too.
 *
 * Given a reader of the accounts' waiting runs (`start`), it keeps the same count per account (`currentOf`), for
 * one account's share of the bound: read in the same turn as the queue's, with this node's own dispatches of the
 * account counted at once in the same way. Without one (the bots belong to one account), a dispatch costs one
 * increment and a read nothing more.
 */
export class RunQueueBacklog {
  /** The queue's count at the last read, and how many of this node's adds had completed when that read was sent. */
  private atRead = 0;
  private enqueuedAtRead = 0;
  /** Jobs this node has dispatched, ever. */
  private dispatchedJobs = 0;
  /** Of those, the ones whose add had completed (or failed) in Redis: a read sent after it counts them. */
  private enqueued = 0;
  /** Each account's waiting runs at the last read; only while accounts are counted. */
  private waitingAtRead = new Map<string, number>();
  /** This node's jobs per account, kept while some are not seen by a read yet; only while accounts are counted. */
  private readonly own = new Map<string, OwnJobs>();
  private countWaitingOf?: () => Promise<ReadonlyMap<string, number>>;
  private timer?: NodeJS.Timeout;
  private reading = false;
  /** The end of the last add or read (see `inTurn`). */
  private turns: Promise<void> = Promise.resolve();

  constructor(
    /** The queue's waiting, prioritized and delayed jobs, as Redis holds them now. */
    private readonly countQueued: () => Promise<number>,
  ) {}

  /**
   * Reads once (a node started in front of a full queue refuses from its first trigger), then every
   * `BACKLOG_READ_MS`; each account's waiting runs as well when `countWaitingOf` is given (before any dispatch).
   */
  async start(countWaitingOf?: () => Promise<ReadonlyMap<string, number>>): Promise<void> {
    this.countWaitingOf = countWaitingOf;
    await this.read();
    this.timer = setInterval(() => void this.read(), BACKLOG_READ_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** A run was just dispatched: counted from now on, before Redis has its job. */
  dispatched(accountId: string): void {
    this.dispatchedJobs++;
    if (!this.countWaitingOf) return;
    const own = this.own.get(accountId);
    if (own) own.dispatched++;
    else this.own.set(accountId, { dispatched: 1, enqueued: 0, enqueuedAtRead: 0 });
  }

  /** Runs the add of `runs`' jobs in its turn; once it ended (added or failed), a read sent after it counts them. */
  add<T>(runs: readonly { accountId: string }[], step: () => Promise<T>): Promise<T> {
    return this.inTurn(async () => {
      try {
        return await step();
      } finally {
        this.enqueued += runs.length;
        // A run dispatched before accounts were counted (before `start`) has no entry: nothing of it to count off.
        if (this.countWaitingOf) {
          for (const run of runs) {
            const own = this.own.get(run.accountId);
            if (own) own.enqueued++;
          }
        }
      }
    });
  }

  /** The queue's backlog at the last read, plus this node's jobs that read could not see. */
  current(): number {
    return this.atRead + this.dispatchedJobs - this.enqueuedAtRead;
  }

  /** The account's waiting runs at the last read, plus this node's jobs of the account that read could not see; 0 when accounts are not counted. */
  currentOf(accountId: string): number {
    const own = this.own.get(accountId);
    return (this.waitingAtRead.get(accountId) ?? 0) + (own ? own.dispatched - own.enqueuedAtRead : 0);
  }

  private async read(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      await this.inTurn(async () => {
        // No add completes while this turn lasts: what they counted now is what Redis holds for the read.
        const enqueued = this.enqueued;
        const [queued, waitingOf] = await Promise.all([this.countQueued(), this.countWaitingOf?.()]);
        this.atRead = queued;
        this.enqueuedAtRead = enqueued;
        if (!waitingOf) return;
        // An account's waiting runs are among the queue's: a count left too high (see AccountQueuePositions) never
        // refuses an account more than the queue holds.
        this.waitingAtRead = new Map([...waitingOf].map(([accountId, n]) => [accountId, Math.min(n, queued)]));
        for (const [accountId, own] of this.own) {
          own.enqueuedAtRead = own.enqueued;
          if (own.dispatched <= own.enqueued) this.own.delete(accountId);
        }
      });
    } catch {
      // Reported by the Redis client's error listener; the next read tries again.
    } finally {
      this.reading = false;
    }
  }

  private inTurn<T>(step: () => Promise<T>): Promise<T> {
    const turn = this.turns.then(step);
    this.turns = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }
}
