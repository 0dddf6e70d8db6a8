import { resolveWebhookTriggerOptions } from '../options/resolve-options.js';
import { InProcessBotRunner } from './in-process.runner.js';
import type { InvocationExecutor } from './invocation.executor.js';

/**
 * The runner's one collaborator, reduced to what the runner uses: `execute(id)` starts a run that ends
 * when the test says so, and `draining`.
 */
class HeldExecutor {
  draining = false;
  readonly started: string[] = [];
  private readonly held: Array<{ id: string; end: () => void }> = [];

  execute(id: string): Promise<void> {
    this.started.push(id);
    return new Promise<void>((end) => this.held.push({ id, end }));
  }

  /** Ends the oldest run in flight with this id. */
  async end(id: string): Promise<void> {
    const i = this.held.findIndex((h) => h.id === id);
    this.held.splice(i, 1)[0].end();
    await new Promise((r) => setImmediate(r)); // let the runner's .finally() hand the slot on
  }

  get running(): string[] {
    return this.held.map((h) => h.id);
  }
}

function setUp(maxConcurrentRuns: number, maxConcurrentRunsPerAccount?: number) {
  const executor = new HeldExecutor();
  const options = resolveWebhookTriggerOptions({ maxConcurrentRuns, maxConcurrentRunsPerAccount });
  return { executor, runner: new InProcessBotRunner(executor as unknown as InvocationExecutor, options) };
}

const runsOf = (account: string, n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ id: `${account}${from + i}`, accountId: account }));

describe('InProcessBotRunner', () => {
  it('holds each account to maxConcurrentRunsPerAccount, and gives free slots to accounts under it, in turn', async () => {
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

  it("starts another account's run at once behind a backlog of 60,000 runs of one account, in constant time per start", async () => {
    const { executor, runner } = setUp(16); // per-account cap: 8
    const t0 = performance.now();
    for (const run of runsOf('a', 60_000)) await runner.dispatch(run);
    await runner.dispatch({ id: 'b0', accountId: 'b' });
    expect(executor.started).toEqual([...runsOf('a', 8).map((r) => r.id), 'b0']);
    // Drain the whole backlog: every start is O(1), so this is a matter of milliseconds, not a scan per start.
    while (executor.running.length > 0) await executor.end(executor.running[0]);
    expect(executor.started).toHaveLength(60_001);
    expect(performance.now() - t0).toBeLessThan(10_000);
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

  it('counts as its backlog the runs waiting for a slot, not those executing', async () => {
    const { executor, runner } = setUp(2, 1);
    expect(runner.backlog()).toBe(0);
    for (const run of [...runsOf('a', 3), ...runsOf('b', 1)]) await runner.dispatch(run);
    expect(executor.running).toEqual(['a0', 'b0']);
    expect(runner.backlog()).toBe(2); // a1, a2: a is at its cap
    await executor.end('b0');
    expect(runner.backlog()).toBe(2); // a free slot, but a is at its cap: still waiting
    await executor.end('a0');
    expect(executor.running).toEqual(['a1']);
    expect(runner.backlog()).toBe(1);
    await executor.end('a1');
    await executor.end('a2');
    expect(runner.backlog()).toBe(0);
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
