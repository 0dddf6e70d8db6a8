import { BACKLOG_READ_MS } from './bullmq-run-queue.js';

/**
 * The run queue's backlog as `maxQueuedRuns` bounds it, answered from memory on every trigger: the queue's
 * waiting, prioritized and delayed jobs at the last read (from Redis every `BACKLOG_READ_MS`), plus the jobs
 * this node dispatched that the read could not see. Adds and reads take turns (one at a time; the Batcher
 * already sends one add batch at a time), so a read never overlaps an add: it counts exactly the jobs whose add
 * completed before it, and `current()` adds the ones dispatched since. This node's own jobs always count at once
 * and never twice. When Redis does not answer, the last read stands and this node's own additions still
 * count, so a node cut off from its queue stops accepting at the bound too.
 */
export class RunQueueBacklog {
  /** The queue's count at the last read, and how many of this node's adds had completed when that read was sent. */
  private atRead = 0;
  private enqueuedAtRead = 0;
  /** Jobs this node has dispatched, ever. */
  private dispatchedJobs = 0;
  /** Of those, the ones whose add had completed (or failed) in Redis: a read sent after it counts them. */
  private enqueued = 0;
  private timer?: NodeJS.Timeout;
  private reading = false;
  /** The end of the last add or read (see `inTurn`). */
  private turns: Promise<void> = Promise.resolve();

  constructor(
    /** The queue's waiting, prioritized and delayed jobs, as Redis holds them now. */
    private readonly countQueued: () => Promise<number>,
  ) {}

  /** Reads once (a node started in front of a full queue refuses from its first trigger), then every `BACKLOG_READ_MS`. */
  async start(): Promise<void> {
    await this.read();
    this.timer = setInterval(() => void this.read(), BACKLOG_READ_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** A run was just dispatched: counted from now on, before Redis has its job. */
  dispatched(): void {
    this.dispatchedJobs++;
  }

  /** Runs the add of `runs` jobs in its turn; once it ended (added or failed), a read sent after it counts them. */
  add<T>(runs: number, step: () => Promise<T>): Promise<T> {
    return this.inTurn(async () => {
      try {
        return await step();
      } finally {
        this.enqueued += runs;
      }
    });
  }

  /** The queue's backlog at the last read, plus this node's jobs that read could not see. */
  current(): number {
    return this.atRead + this.dispatchedJobs - this.enqueuedAtRead;
  }

  private async read(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      await this.inTurn(async () => {
        const enqueued = this.enqueued;
        this.atRead = await this.countQueued();
        this.enqueuedAtRead = enqueued;
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
