import { Logger } from '@nestjs/common';
import { resolveWebhookTriggerOptions } from '../options/resolve-options.js';
import { SYSTEM_CLOCK, type Clock } from '../time/clock.js';
import { ManualClock } from '../time/manual-clock.js';
import { DispatchRetries } from './dispatch-retries.js';
import { InProcessBotRunner } from './in-process.runner.js';
import type { InvocationExecutor } from './invocation.executor.js';
import { RunClaimError } from './run-error.js';

/**
 * The runner's one collaborator, reduced to what the runner uses: `execute(id, botDone)` starts a run whose
 * bot is done (`botDone`) and whose outcome is stored (the promise resolves) when the test says so, and
 * `draining`.
 */
class HeldExecutor {
  draining = false;
  readonly owner = 'this-process';
  readonly started: string[] = [];
  private readonly held: Array<{
    id: string;
    botDone: () => void;
    stored: () => void;
    failed: (error: unknown) => void;
    executing: boolean;
  }> = [];

  execute(id: string, botDone: () => void): Promise<void> {
    this.started.push(id);
    return new Promise<void>((stored, failed) => this.held.push({ id, botDone, stored, failed, executing: true }));
  }

  /** A run its accept step stored running for this process: no claim, held like the others. */
  runAccepted(run: { id: string }, botDone: () => void): Promise<void> {
    return this.execute(run.id, botDone);
  }

  /** The bot of the oldest run executing with this id returns; its outcome is still being stored. */
  async botDone(id: string): Promise<void> {
    const run = this.held.find((h) => h.id === id && h.executing)!;
    run.executing = false;
    run.botDone();
    await new Promise((r) => setImmediate(r));
  }

  /** Ends the oldest run in flight with this id: its bot returns (if it had not) and its outcome is stored. */
  async end(id: string): Promise<void> {
    const i = this.held.findIndex((h) => h.id === id);
    const [run] = this.held.splice(i, 1);
    if (run.executing) run.botDone();
    run.stored();
    await new Promise((r) => setImmediate(r)); // let the runner's .finally() hand the slot on
  }

  /** The oldest run in flight with this id fails with `error` (its claim, or storing its start or outcome). */
  async fail(id: string, error: unknown): Promise<void> {
    const i = this.held.findIndex((h) => h.id === id);
    const [run] = this.held.splice(i, 1);
    run.failed(error);
    await new Promise((r) => setImmediate(r));
  }

  /** Runs whose bot is executing. */
  get running(): string[] {
    return this.held.filter((h) => h.executing).map((h) => h.id);
  }
}

function setUp(maxConcurrentRuns: number, maxConcurrentRunsPerAccount?: number, clock: Clock = SYSTEM_CLOCK) {
  const executor = new HeldExecutor();
  const options = resolveWebhookTriggerOptions({ maxConcurrentRuns, maxConcurrentRunsPerAccount });
  const retries = new DispatchRetries(options, clock);
  return { executor, retries, runner: new InProcessBotRunner(executor as unknown as InvocationExecutor, options, retries) };
}

const runsOf = (account: string, n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ id: `${account}${from + i}`, accountId: account }));

describe('InProcessBotRunner', () => {
  beforeAll(() => Logger.overrideLogger(false)); // the notes on runs given up or dispatched again

  it('holds each account to maxConcurrentRunsPerAccount when one is set, and gives free slots to accounts under it', async () => {
    const { executor, runner } = setUp(4, 2);
    for (const run of [...runsOf('a', 5), ...runsOf('b', 5), ...runsOf('c', 5)]) await runner.dispatch(run);
    expect(executor.started).toEqual(['a0', 'a1', 'b0', 'b1']); // a and b at their cap; c waits for a slot in all
    await executor.end('a0');
    expect(executor.started.slice(4)).toEqual(['c0']); // c's turn came before a's next
    await executor.end('b0');
    expect(executor.started.slice(5)).toEqual(['a2']); // a was in line before b
    await executor.end('a1');
    expect(executor.started.slice(6)).toEqual(['c1']);
    await executor.end('c0');
    expect(executor.started.slice(7)).toEqual(['b2']);
    // Each account's runs start in the order they came.
    for (const account of ['a', 'b', 'c']) {
      const mine = executor.started.filter((id) => id.startsWith(account));
      expect(mine).toEqual(runsOf(account, mine.length).map((r) => r.id));
    }
  });

  it('never runs more than maxConcurrentRuns in all, nor more than the per-account cap of one account, until every run ended', async () => {
    const { executor, runner } = setUp(3, 2);
    const all = [...runsOf('a', 20), ...runsOf('b', 3), ...runsOf('c', 1)];
    for (const run of all) await runner.dispatch(run);
    while (executor.running.length > 0) {
      const running = executor.running;
      expect(running.length).toBeLessThanOrEqual(3);
      for (const account of ['a', 'b', 'c']) expect(running.filter((id) => id.startsWith(account)).length).toBeLessThanOrEqual(2);
      await executor.end(running[0]);
    }
    expect(executor.started.sort()).toEqual(all.map((r) => r.id).sort());
  });

  it('lets an account alone use every slot', async () => {
    const { executor, runner } = setUp(4);
    for (const run of runsOf('a', 10)) await runner.dispatch(run);
    expect(executor.running).toEqual(['a0', 'a1', 'a2', 'a3']);
    await executor.end('a0');
    expect(executor.running).toEqual(['a1', 'a2', 'a3', 'a4']);
  });

  it('gives a freed slot to the account running the fewest, ties in turn, so a newcomer waits for one run to end', async () => {
    const { executor, runner } = setUp(4);
    for (const run of [...runsOf('a', 10), ...runsOf('b', 3), ...runsOf('c', 3)]) await runner.dispatch(run);
    expect(executor.running).toEqual(['a0', 'a1', 'a2', 'a3']); // a came first and had every slot
    await executor.end('a0');
    expect(executor.started.slice(4)).toEqual(['b0']); // b and c run none: b was first in line
    await executor.end('a1');
    expect(executor.started.slice(5)).toEqual(['c0']); // c runs none, b one
    await executor.end('a2');
    expect(executor.started.slice(6)).toEqual(['b1']); // one each: b, c, a in the order they reached one
    await executor.end('b0');
    expect(executor.started.slice(7)).toEqual(['c1']);
    await executor.end('c0');
    expect(executor.started.slice(8)).toEqual(['a4']);
  });

  it('splits the slots evenly between two accounts with deep backlogs', async () => {
    const { executor, runner } = setUp(4);
    for (const run of [...runsOf('a', 100), ...runsOf('b', 100)]) await runner.dispatch(run);
    await executor.end('a0');
    await executor.end('a1');
    for (let i = 0; i < 50; i++) {
      const running = executor.running;
      expect(running.filter((id) => id.startsWith('a'))).toHaveLength(2);
      expect(running.filter((id) => id.startsWith('b'))).toHaveLength(2);
      await executor.end(running[i % 4]);
    }
  });

  it('frees the slot when the bot is done, before its outcome is stored; outcomes being stored are bounded by maxConcurrentRuns too', async () => {
    const { executor, runner } = setUp(2);
    for (const run of runsOf('a', 5)) await runner.dispatch(run);
    expect(executor.running).toEqual(['a0', 'a1']);
    await executor.botDone('a0');
    expect(executor.running).toEqual(['a1', 'a2']); // a0's outcome is still being stored
    await executor.botDone('a1');
    expect(executor.running).toEqual(['a2']); // two outcomes being stored: no start until one is
    await executor.end('a0');
    expect(executor.running).toEqual(['a2', 'a3']);
  });

  it("holds an account to its cap and counts its backlog after its runs' outcomes are stored out of order", async () => {
    // a0's outcome is stored last: by then a1's end had let the account go idle, and a2 had started since.
    const { executor, runner } = setUp(4, 1);
    await runner.dispatch({ id: 'a0', accountId: 'a' });
    await executor.botDone('a0');
    await runner.dispatch({ id: 'a1', accountId: 'a' });
    await executor.end('a1');
    await runner.dispatch({ id: 'a2', accountId: 'a' });
    await executor.end('a0');
    expect(executor.running).toEqual(['a2']);
    await runner.dispatch({ id: 'a3', accountId: 'a' });
    expect(executor.running).toEqual(['a2']); // a3 waits: the account runs a2, its cap
    expect(runner.backlogOf('a')).toBe(1);
    await runner.dispatch({ id: 'a4', accountId: 'a' });
    expect(runner.backlogOf('a')).toBe(2);
    await executor.end('a2');
    expect(executor.running).toEqual(['a3']);
  });

  it("starts another account's run at the first free slot behind a backlog of 60,000 runs of one account, in constant time per start", async () => {
    const { executor, runner } = setUp(16);
    const t0 = performance.now();
    for (const run of runsOf('a', 60_000)) await runner.dispatch(run);
    await runner.dispatch({ id: 'b0', accountId: 'b' });
    expect(executor.started).toEqual(runsOf('a', 16).map((r) => r.id));
    await executor.end('a0');
    expect(executor.started.slice(16)).toEqual(['b0']);
    // Drain the whole backlog: picking the next run never scans the backlog, so this takes milliseconds.
    const levels = (runner as unknown as { levels: Array<{ size: number } | undefined> }).levels;
    let kept = 0;
    while (executor.running.length > 0) {
      await executor.end(executor.running[0]);
      kept = Math.max(
        kept,
        levels.reduce((n, level) => n + (level?.size ?? 0), 0),
      );
    }
    expect(executor.started).toHaveLength(60_001);
    expect(performance.now() - t0).toBeLessThan(10_000);
    // The line keeps no trace of the starts: its memory is bounded by the accounts, not by the runs.
    expect(kept).toBeLessThan(200);
  });

  it('reserves a slot for a run being accepted only when one is free and no run waits; the run then holds it like any other', async () => {
    const { executor, runner } = setUp(2);
    const reserved = runner.reserve('a')!;
    expect(reserved.owner).toBe('this-process');
    await runner.dispatch({ id: 'a0', accountId: 'a' });
    await runner.dispatch({ id: 'a1', accountId: 'a' });
    expect(executor.running).toEqual(['a0']); // the reserved slot is taken
    expect(runner.reserve('b')).toBeNull(); // no free slot
    reserved.start({ id: 'accepted' } as never);
    expect(executor.running).toEqual(['a0', 'accepted']);
    await executor.end('a0');
    expect(executor.running).toEqual(['accepted', 'a1']);
    await executor.end('accepted');
    expect(runner.reserve('b')).not.toBeNull(); // a free slot, nobody waiting
  });

  it('gives a reserved slot back when nothing was accepted, and never reserves past a waiting run or an account at its cap', async () => {
    const { executor, runner } = setUp(2, 1);
    const reserved = runner.reserve('a')!;
    await runner.dispatch({ id: 'b0', accountId: 'b' });
    expect(runner.reserve('a')).toBeNull(); // a is at its cap (1)
    reserved.release();
    reserved.start({ id: 'too-late' } as never); // after release: nothing starts
    await runner.dispatch({ id: 'a0', accountId: 'a' });
    expect(executor.running).toEqual(['b0', 'a0']);
    await runner.dispatch({ id: 'b1', accountId: 'b' });
    await executor.end('a0'); // a free slot; b1 waits (b is at its cap)
    expect(executor.running).toEqual(['b0']);
    expect(runner.reserve('c')).toBeNull(); // a run waits: a newcomer goes the queued way, in line
    await runner.dispatch({ id: 'c0', accountId: 'c' });
    expect(executor.running).toEqual(['b0', 'c0']);
  });

  it('a run dispatched twice is handed to the executor twice (its claim makes the second a no-op), and frees both slots', async () => {
    const { executor, runner } = setUp(2, 2);
    await runner.dispatch({ id: 'a0', accountId: 'a' });
    await runner.dispatch({ id: 'a0', accountId: 'a' });
    await runner.dispatch({ id: 'a1', accountId: 'a' });
    expect(executor.started).toEqual(['a0', 'a0']);
    await executor.end('a0');
    expect(executor.started).toEqual(['a0', 'a0', 'a1']);
    expect(executor.running).toEqual(['a0', 'a1']); // the second a0 holds its slot until it ends too
    await executor.end('a0');
    await executor.end('a1');
    expect(executor.running).toEqual([]);
  });

  it('counts as its backlog the runs waiting for a slot, not those executing, and is behind while any waits', async () => {
    const { executor, runner } = setUp(2, 1);
    expect(runner.backlog()).toBe(0);
    for (const run of [...runsOf('a', 3), ...runsOf('b', 1)]) await runner.dispatch(run);
    expect(executor.running).toEqual(['a0', 'b0']);
    expect(runner.backlog()).toBe(2); // a1, a2: a is at its cap
    expect(runner.behind()).toBe(true);
    await executor.end('b0');
    expect(runner.backlog()).toBe(2); // a free slot, but a is at its cap: still waiting
    await executor.end('a0');
    expect(executor.running).toEqual(['a1']);
    expect(runner.backlog()).toBe(1);
    await executor.end('a1');
    await executor.end('a2');
    expect(runner.backlog()).toBe(0);
    expect(runner.behind()).toBe(false);
  });

  it('forgets the failures of a run it gave up (claimed, its outcome not stored): when recovery hands it back, its next failed claim waits 0.5 s again', async () => {
    const clock = new ManualClock();
    const { executor, retries, runner } = setUp(1, undefined, clock);
    const run = { id: 'a0', accountId: 'a' };
    const claimFailed = () => new RunClaimError('a0', new Error('Connection terminated unexpectedly'));
    await runner.dispatch(run);
    await executor.fail('a0', claimFailed()); // dispatched again in 0.5 s
    await clock.tick(500);
    expect(executor.started).toEqual(['a0', 'a0']);
    // Claimed this time, but its outcome could not be stored: given up here (its lease runs out, recovery settles it).
    await executor.fail('a0', new Error('the outcome could not be stored'));
    expect(retries.pending).toBe(0);
    // Recovery hands it back (a retryInterrupted bot), and its claim meets a database error again: its first failure.
    await runner.dispatch(run);
    await executor.fail('a0', claimFailed());
    await clock.tick(500);
    expect(executor.started).toEqual(['a0', 'a0', 'a0', 'a0']);
    await executor.end('a0');
  });

  it('starts nothing once the executor drains; waiting runs stay queued', async () => {
    const { executor, runner } = setUp(1);
    await runner.dispatch({ id: 'a0', accountId: 'a' });
    await runner.dispatch({ id: 'b0', accountId: 'b' });
    executor.draining = true;
    await runner.dispatch({ id: 'c0', accountId: 'c' });
    await executor.end('a0');
    expect(executor.started).toEqual(['a0']);
  });
});
