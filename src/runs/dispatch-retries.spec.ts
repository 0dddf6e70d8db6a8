import { resolveWebhookTriggerOptions } from '../options/resolve-options.js';
import { ManualClock } from '../time/manual-clock.js';
import type { BotRunner, DispatchedRun } from './bot-runner.js';
import { DispatchRetries } from './dispatch-retries.js';

const RUN: DispatchedRun = { id: 'inv_1', accountId: 'acct' };

/** A runner whose `dispatch` throws its first `failures` calls, and records when each call came. */
function failingRunner(clock: ManualClock, failures: number) {
  const calls: number[] = [];
  const runner = {
    dispatch: (): Promise<void> => {
      calls.push(clock.now());
      return calls.length <= failures ? Promise.reject(new Error('down')) : Promise.resolve();
    },
  } as unknown as BotRunner;
  return { runner, calls };
}

describe('DispatchRetries', () => {
  const setUp = (runLeaseMs = 4_000) => {
    const clock = new ManualClock();
    const retries = new DispatchRetries(resolveWebhookTriggerOptions({ runLeaseMs }), clock);
    return { clock, retries };
  };

  it('dispatches a run again after waits that double from 0.5 s up to runLeaseMs, until its dispatch takes', async () => {
    const { clock, retries } = setUp(4_000);
    const { runner, calls } = failingRunner(clock, 6);
    await retries.dispatchTo(runner, RUN); // resolves although the runner threw
    expect(retries.pending).toBe(1); // counted in the backlog while it waits
    for (let i = 0; i < 60; i++) await clock.tick(500);
    // The first call, then 0.5, 1, 2, 4, 4 and 4 s (runLeaseMs) after each failure; the seventh takes, and no more come.
    expect(calls).toEqual([0, 500, 1_500, 3_500, 7_500, 11_500, 15_500]);
    expect(retries.pending).toBe(0);
  });

  it('forgets a run once a start took, so its next failure waits 0.5 s again', async () => {
    const { clock, retries } = setUp();
    const { runner, calls } = failingRunner(clock, 2);
    await retries.dispatchTo(runner, RUN);
    await clock.tick(500); // fails again: next wait 1 s
    await clock.tick(1_000); // takes
    expect(calls).toEqual([0, 500, 1_500]);
    const again = failingRunner(clock, 1);
    await retries.dispatchTo(again.runner, RUN);
    await clock.tick(500);
    expect(again.calls).toEqual([1_500, 2_000]);
  });

  it('drops every wait at shutdown: the runs stay queued for the next start', async () => {
    const { clock, retries } = setUp();
    const { runner, calls } = failingRunner(clock, 1);
    await retries.dispatchTo(runner, RUN);
    retries.onApplicationShutdown();
    await clock.tick(10_000);
    expect(calls).toEqual([0]);
  });
});
