import { Logger } from '@nestjs/common';
import { RUN_INTERRUPTED, RUN_INTERRUPTED_TOO_OFTEN } from '../errors/webhook-trigger.messages.js';
import { WEBHOOK_EVENTS } from '../events/invocation.events.js';
import type { InvocationRecord } from '../persistence/records.js';
import { createWebhookFakes, type WebhookFakes } from '../../test/fakes/webhook-fakes.js';
import { InterruptedRuns } from './interrupted-runs.js';

describe('InterruptedRuns.settle', () => {
  let f: WebhookFakes;
  let interrupted: InterruptedRuns;
  let published: string[];

  beforeAll(() => Logger.overrideLogger(false));
  beforeEach(() => {
    f = createWebhookFakes();
    interrupted = new InterruptedRuns(f.invocations, f.registry, f.finisher, f.options, f.clock);
    f.addBot({ id: 'once' });
    f.addBot({ id: 'again', retryInterrupted: true });
    published = [];
    f.bus.onAnyFinished((id) => published.push(id));
  });

  let n = 0;
  /** A run claimed by `owner` whose lease is long over. */
  async function lostRun(botId: string, owner = 'dead-worker'): Promise<InvocationRecord> {
    const id = `inv_${String(++n).padStart(22, '0')}`;
    await f.invocations.insert({
      id,
      triggerId: 'trg_AAAAAAAAAAAAAAAA',
      botId,
      accountId: 'acct',
      inputs: {},
      credits: 1,
      idempotencyKey: null,
      requestHash: null,
      createdAt: new Date(),
    });
    return (await f.invocations.markRunning(id, new Date(Date.now() - 5000), owner, new Date(Date.now() - 1000)))!;
  }

  it("fails a default bot's run still held by the dead owner, publishes it and emits failed", async () => {
    const run = await lostRun('once');
    expect(await interrupted.settle(run, { owner: 'dead-worker' })).toBe('failed');
    expect(await f.invocations.findById(run.id)).toMatchObject({
      status: 'failed',
      error: { message: RUN_INTERRUPTED, code: 'interrupted' },
    });
    expect(published).toEqual([run.id]);
    expect(f.events.map((e) => e.name)).toEqual([WEBHOOK_EVENTS.failed]);
  });

  it("requeues a retryInterrupted bot's run and leaves the dispatch to the caller (no publish, no event)", async () => {
    const run = await lostRun('again');
    expect(await interrupted.settle(run, { leaseExpiredBefore: new Date() })).toBe('requeued');
    expect(await f.invocations.findById(run.id)).toMatchObject({ status: 'queued', owner: null, startedAt: null });
    expect(published).toEqual([]);
    expect(f.events).toEqual([]);
    expect(f.runner.dispatched).toEqual([]);
  });

  it('stops a retryInterrupted run that lost its process on each of maxRunAttempts attempts: failed, credits kept', async () => {
    await f.accounts.setBalance('acct', 10);
    const run = await lostRun('again');
    const settled: Array<string | null> = [];
    let lost = run;
    for (;;) {
      expect(lost.attempts).toBe(settled.length + 1); // each claim counted once, by the claim itself
      const outcome = await interrupted.settle(lost, { owner: 'dead-worker' });
      settled.push(outcome);
      if (outcome !== 'requeued') break;
      lost = (await f.invocations.markRunning(run.id, new Date(), 'dead-worker', new Date(Date.now() - 1000)))!;
    }
    expect(f.options.maxRunAttempts).toBe(3);
    expect(settled).toEqual(['requeued', 'requeued', 'failed']);
    expect(await f.invocations.findById(run.id)).toMatchObject({
      status: 'failed',
      attempts: 3,
      finishedAt: expect.any(Date),
      error: { message: RUN_INTERRUPTED_TOO_OFTEN(3), code: 'interrupted_too_often' },
    });
    expect(await f.accounts.getBalance('acct')).toBe(10); // nothing refunded (nor charged) here
    expect(published).toEqual([run.id]);
    expect(f.events.map((e) => e.name)).toEqual([WEBHOOK_EVENTS.failed]);
    // Settled: a second recovery of the same loss changes nothing.
    expect(await interrupted.settle(lost, { leaseExpiredBefore: new Date() })).toBeNull();
  });

  it('follows the option (maxRunAttempts: 1 fails at the first interruption) and leaves runs of stores without attempts unbounded', async () => {
    f = createWebhookFakes({ maxRunAttempts: 1 });
    interrupted = new InterruptedRuns(f.invocations, f.registry, f.finisher, f.options, f.clock);
    f.addBot({ id: 'again', retryInterrupted: true });
    const run = await lostRun('again');
    expect(await interrupted.settle(run, { owner: 'dead-worker' })).toBe('failed');
    expect((await f.invocations.findById(run.id))?.error?.code).toBe('interrupted_too_often');

    const uncounted = await lostRun('again');
    expect(await interrupted.settle({ ...uncounted, attempts: undefined }, { owner: 'dead-worker' })).toBe('requeued');
  });

  it('changes nothing when the run is no longer lost: claimed by a live owner, or finished meanwhile', async () => {
    const reclaimed = await lostRun('once');
    await f.invocations.recoverInterrupted(reclaimed.id, { owner: 'dead-worker' }, 'queued', {});
    await f.invocations.markRunning(reclaimed.id, new Date(), 'live-worker', new Date(Date.now() + 60_000));
    expect(await interrupted.settle(reclaimed, { owner: 'dead-worker' })).toBeNull();
    expect(await interrupted.settle(reclaimed, { leaseExpiredBefore: new Date() })).toBeNull();
    expect(await f.invocations.findById(reclaimed.id)).toMatchObject({ status: 'running', owner: 'live-worker' });

    const finished = await lostRun('once');
    await f.invocations.transition(finished.id, 'running', 'succeeded', { finishedAt: new Date(), outputs: [] });
    expect(await interrupted.settle(finished, { leaseExpiredBefore: new Date() })).toBeNull();
    expect((await f.invocations.findById(finished.id))?.status).toBe('succeeded');
    expect(published).toEqual([]);
    expect(f.events).toEqual([]);
  });

  it('settles a run once when two processes recover it at the same time', async () => {
    const run = await lostRun('once');
    const results = await Promise.all([
      interrupted.settle(run, { leaseExpiredBefore: new Date() }),
      interrupted.settle(run, { owner: 'dead-worker' }),
    ]);
    expect(results.sort()).toEqual(['failed', null]);
    expect(f.events).toHaveLength(1);
    expect(published).toEqual([run.id]);
  });
});
