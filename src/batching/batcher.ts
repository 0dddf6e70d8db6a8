/** One item waiting for its batch. */
interface Waiting<I, O> {
  item: I;
  resolve: (value: O | PromiseLike<O>) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit's queue: the items pushed while a batch is in flight (or in the same tick, when none is)
 * go together into the next one, at most `max` at a time, so one node has one such batch in flight. Each
 * caller hears its own answer once `write` (one transaction, or one statement) resolved; if it rejects,
 * every caller of that batch hears the error. An answer may be a promise: a rejected one is its caller's error alone
 * (a batch written in two steps, whose second failed after the first committed).
 */
export class Batcher<I, O> {
  private waiting: Waiting<I, O>[] = [];
  /** The batch being written: settles once each of its callers heard its answer. */
  private inFlight: Promise<void> | undefined;
  private scheduled = false;

  constructor(
    /** Writes a batch; answers one result per item, in order (a rejected promise: that item's error). */
    private readonly write: (items: I[]) => Promise<Array<O | Promise<O>>>,
    private readonly max = 500,
  ) {}

  push(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** The batch in flight, settled once it has been answered (whatever the answer); undefined when none is. */
  settled(): Promise<void> | undefined {
    return this.inFlight;
  }

  /** After the items of this tick; while a batch is in flight, the next one waits for it. */
  private schedule(): void {
    if (this.inFlight || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.inFlight || this.waiting.length === 0) return;
    const batch = this.waiting.length <= this.max ? this.waiting : this.waiting.slice(0, this.max);
    this.waiting = this.waiting.length <= this.max ? [] : this.waiting.slice(this.max);
    this.inFlight = this.answer(batch).then(() => {
      this.inFlight = undefined;
      if (this.waiting.length > 0) this.schedule();
    });
  }

  /** Writes `batch` and answers each of its callers; never rejects (a failed write is every caller's error). */
  private async answer(batch: Waiting<I, O>[]): Promise<void> {
    try {
      const results = await this.write(batch.map((w) => w.item));
      batch.forEach((w, i) => w.resolve(results[i]));
    } catch (error) {
      for (const w of batch) w.reject(error);
    }
  }
}
