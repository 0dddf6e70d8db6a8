import { RunQueueBacklog } from './run-queue-backlog.js';

/** A queue whose count the spec sets, and whose reads it lets finish (or fail) when it chooses. */
function queue() {
  let jobs = 0;
  const reads: { answer: () => void; fail: () => void }[] = [];
  const countQueued = () =>
    new Promise<number>((resolve, reject) => {
      const seen = jobs; // what Redis holds when the read arrives
      reads.push({ answer: () => resolve(seen), fail: () => reject(new Error('Redis did not answer')) });
    });
  return {
    countQueued,
    reads,
    hold: (n: number) => (jobs = n),
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('RunQueueBacklog', () => {
  let opened: RunQueueBacklog | undefined; // stopped after each test (its read timer)
  afterEach(() => opened?.stop());

  /** A backlog started in front of a queue holding `jobs` (its first read answered). */
  async function started(jobs: number) {
    const q = queue();
    q.hold(jobs);
    const backlog = (opened = new RunQueueBacklog(q.countQueued));
    const starting = backlog.start();
    await turn();
    q.reads[0].answer();
    await starting;
    return { q, backlog, read: () => (backlog as unknown as { read(): Promise<void> }).read() };
  }

  it("counts a dispatched run at once, before Redis has its job, and once its add is in, from the queue's count alone", async () => {
    const { q, backlog, read: readQueue } = await started(3);
    expect(backlog.current()).toBe(3);

    backlog.dispatched();
    expect(backlog.current()).toBe(4);
    let finishAdd!: () => void;
    const added = backlog.add(1, () => new Promise<void>((resolve) => (finishAdd = resolve)));
    // A read sent while the add is in flight waits for it (they take turns), then sees the job once.
    const read = readQueue();
    await turn();
    expect(q.reads).toHaveLength(1);
    q.hold(4);
    finishAdd();
    await added;
    await turn();
    q.reads[1].answer();
    await read;
    expect(backlog.current()).toBe(4);
  });

  it('keeps the last count when a read fails, and still counts its own dispatches', async () => {
    const { q, backlog, read: readQueue } = await started(10);
    const read = readQueue();
    await turn();
    q.reads[1].fail();
    await read;
    backlog.dispatched();
    expect(backlog.current()).toBe(11);
  });

  it('counts a failed add as done: its runs come back through the sweep, so the next read decides', async () => {
    const { q, backlog, read: readQueue } = await started(0);
    backlog.dispatched();
    await expect(backlog.add(1, () => Promise.reject(new Error('Redis down')))).rejects.toThrow('Redis down');
    const read = readQueue();
    await turn();
    q.reads[1].answer(); // the queue holds 0: the failed job is not there
    await read;
    expect(backlog.current()).toBe(0);
  });
});
