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

  /** The read of each account's waiting runs beside the queue's, answering what the spec sets, at once. */
  function accountsRead() {
    let waiting = new Map<string, number>();
    return { countWaitingOf: () => Promise.resolve(waiting), hold: (m: Record<string, number>) => (waiting = new Map(Object.entries(m))) };
  }

  it("counts a dispatched run at once, before Redis has its job, and once its add is in, from the queue's count alone", async () => {
    const { q, backlog, read: readQueue } = await started(3);
    expect(backlog.current()).toBe(3);

    backlog.dispatched('acct');
    expect(backlog.current()).toBe(4);
    let finishAdd!: () => void;
    const added = backlog.add([{ accountId: 'acct' }], () => new Promise<void>((resolve) => (finishAdd = resolve)));
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
    backlog.dispatched('acct');
    expect(backlog.current()).toBe(11);
  });

  it('counts a failed add as done: its runs come back through the sweep, so the next read decides', async () => {
    const { q, backlog, read: readQueue } = await started(0);
    backlog.dispatched('acct');
    await expect(backlog.add([{ accountId: 'acct' }], () => Promise.reject(new Error('Redis down')))).rejects.toThrow('Redis down');
    const read = readQueue();
    await turn();
    q.reads[1].answer(); // the queue holds 0: the failed job is not there
    await read;
    expect(backlog.current()).toBe(0);
  });

  it("counts an account's runs as its read says, plus its own dispatches at once, once each; never more than the queue holds", async () => {
    const q = queue();
    const accounts = accountsRead();
    q.hold(5);
    accounts.hold({ acct: 2, other: 3 });
    const backlog = (opened = new RunQueueBacklog(q.countQueued));
    const starting = backlog.start(accounts.countWaitingOf);
    await turn();
    q.reads[0].answer();
    await starting;
    const readQueue = () => (backlog as unknown as { read(): Promise<void> }).read();
    expect([backlog.currentOf('acct'), backlog.currentOf('other'), backlog.currentOf('third')]).toEqual([2, 3, 0]);

    backlog.dispatched('acct');
    expect(backlog.currentOf('acct')).toBe(3);
    await backlog.add([{ accountId: 'acct' }], () => Promise.resolve());
    expect(backlog.currentOf('acct')).toBe(3);
    // The next read sees the job in the account's count: counted once.
    q.hold(6);
    accounts.hold({ acct: 3, other: 3 });
    const read = readQueue();
    await turn();
    q.reads[1].answer();
    await read;
    expect(backlog.currentOf('acct')).toBe(3);

    // A count left too high (a dead worker's runs) is capped by the queue's jobs.
    q.hold(1);
    accounts.hold({ acct: 40 });
    const capped = readQueue();
    await turn();
    q.reads[2].answer();
    await capped;
    expect([backlog.currentOf('acct'), backlog.currentOf('other')]).toEqual([1, 0]);
  });

  it('adds a run dispatched before accounts were counted without failing, and counts the runs dispatched after', async () => {
    const q = queue();
    q.hold(0);
    const accounts = accountsRead();
    const backlog = (opened = new RunQueueBacklog(q.countQueued));
    backlog.dispatched('acct'); // before start: recovery's dispatch, say
    const starting = backlog.start(accounts.countWaitingOf);
    await turn();
    q.reads[0].answer();
    await starting;
    await expect(backlog.add([{ accountId: 'acct' }], () => Promise.resolve('added'))).resolves.toBe('added');
    backlog.dispatched('acct');
    await backlog.add([{ accountId: 'acct' }], () => Promise.resolve());
    expect(backlog.current()).toBe(2);
    backlog.dispatched('acct');
    // Until the next read, the account's own runs dispatched since `start` count (the earlier one in the queue's count only).
    expect(backlog.currentOf('acct')).toBe(2);
    expect(backlog.current()).toBe(3);
  });

  it('counts no account without a reader of their runs (the bots belong to one account)', async () => {
    const { backlog } = await started(4);
    backlog.dispatched('acct');
    await backlog.add([{ accountId: 'acct' }], () => Promise.resolve());
    expect(backlog.current()).toBe(5);
    expect(backlog.currentOf('acct')).toBe(0);
  });
});
