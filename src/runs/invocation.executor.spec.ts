import { Logger } from '@nestjs/common';
import { BOT_NOT_REGISTERED, INVALID_OUTPUTS, RUN_INTERRUPTED, RUN_TIMED_OUT } from '../errors/webhook-trigger.messages.js';
import { WEBHOOK_EVENTS } from '../events/invocation.events.js';
import { deferred } from '../../test/fakes/webhook-fakes.js';
import { executorHarness } from '../../test/fakes/executor-harness.js';
import { sleep } from '../../test/helpers/http.js';
import { InvocationExecutor } from './invocation.executor.js';
import { RunStop } from './run-stop.reasons.js';
import { ManualClock } from '../time/manual-clock.js';

describe('InvocationExecutor', () => {
  const h = executorHarness();

  beforeAll(() => Logger.overrideLogger(false)); // the executor's notes on dropped outcomes
  beforeEach(() => h.setUp());

  it('runs a queued run once, even when executed twice at the same time or again later', async () => {
    h.bot(async () => [{ title: 't', message: 'm' }]);
    const id = await h.queued();
    await Promise.all([h.executor.execute(id), h.executor.execute(id)]);
    await h.executor.execute(id);
    expect(h.calls).toHaveLength(1);
    expect((await h.row(id))?.status).toBe('succeeded');
    expect(h.eventNames()).toEqual([WEBHOOK_EVENTS.started, WEBHOOK_EVENTS.succeeded]);
  });

  it('stores a success with its outputs (title and message only), owned and timed, and tells the bot who it runs for', async () => {
    h.bot(async () => [{ title: 'Weather', message: 'Sunny', secret: 'not for the caller' } as never]);
    const id = await h.queued('bot', { city: 'Oslo' });
    const before = Date.now();
    await h.executor.execute(id);
    const stored = (await h.row(id))!;
    expect(stored).toMatchObject({ status: 'succeeded', error: null, owner: h.executor.owner });
    expect(stored.outputs).toEqual([{ title: 'Weather', message: 'Sunny' }]); // toEqual: no field beyond these two
    expect(stored.startedAt!.getTime()).toBeGreaterThanOrEqual(before);
    expect(stored.finishedAt!.getTime()).toBeGreaterThanOrEqual(stored.startedAt!.getTime());
    expect(h.calls[0].inputs).toEqual({ city: 'Oslo' });
    expect(h.calls[0].ctx).toMatchObject({ invocationId: id, triggerId: 'trg_AAAAAAAAAAAAAAAA', botId: 'bot', accountId: 'acct' });
    expect(h.calls[0].ctx.signal.aborted).toBe(false);
  });

  it("stores a bot's error as failed with its message", async () => {
    h.bot(async (inputs) => {
      if (inputs.kind === 'string') throw 'plain text'; // eslint-disable-line @typescript-eslint/only-throw-error -- a bot that throws a non-Error is what this tests
      throw new Error('upstream answered 500');
    });
    const a = await h.queued('bot', { kind: 'error' });
    const b = await h.queued('bot', { kind: 'string' });
    await h.executor.execute(a);
    await h.executor.execute(b);
    expect(await h.row(a)).toMatchObject({ status: 'failed', outputs: [], error: { message: 'upstream answered 500' } });
    expect((await h.row(a))?.error?.code).toBeUndefined();
    expect((await h.row(b))?.error).toEqual({ message: 'plain text' });
    expect(h.eventNames().filter((e) => e === WEBHOOK_EVENTS.failed)).toHaveLength(2);
  });

  it('stores invalid outputs as failed (invalid_outputs)', async () => {
    h.bot(async (inputs) => inputs.outputs as never);
    const ids = [
      await h.queued('bot', { outputs: [{ title: 't' }] }),
      await h.queued('bot', { outputs: 'done' }),
      await h.queued('bot', { outputs: [null] }),
    ];
    for (const id of ids) await h.executor.execute(id);
    for (const id of ids) {
      expect(await h.row(id)).toMatchObject({
        status: 'failed',
        outputs: [],
        error: { message: INVALID_OUTPUTS, code: 'invalid_outputs' },
      });
    }
  });

  it("ends a run at its bot's time limit as timed_out, even when the bot ignores its signal", async () => {
    h.bot(() => new Promise(() => undefined), { timeoutMs: 40 });
    const id = await h.queued();
    const start = Date.now();
    await h.executor.execute(id);
    expect(Date.now() - start).toBeLessThan(1000);
    expect(await h.row(id)).toMatchObject({ status: 'timed_out', outputs: [], error: { message: RUN_TIMED_OUT(40), code: 'timeout' } });
    expect(h.calls[0].ctx.signal.aborted).toBe(true);
    expect(h.eventNames()).toEqual([WEBHOOK_EVENTS.started, WEBHOOK_EVENTS.timed_out]);
  });

  it("measures a bot's time limit on the module's clock: an hour passes when the clock moves, not in real time", async () => {
    const start = Date.parse('2026-01-01T00:00:00Z');
    const clock = new ManualClock(start);
    h.setUp({}, { clock });
    h.bot(() => new Promise(() => undefined), { timeoutMs: 3_600_000 });
    const id = await h.queued();
    const running = h.executor.execute(id);
    await clock.tick(3_599_999);
    expect(await h.row(id)).toMatchObject({ status: 'running', startedAt: new Date(start) });
    await clock.tick(1);
    await running;
    expect(await h.row(id)).toMatchObject({ status: 'timed_out', finishedAt: new Date(start + 3_600_000), error: { code: 'timeout' } });
  });

  it('ends as timed_out, not as its own failure, a bot that rejects because its signal fired', async () => {
    h.bot(
      (_inputs, ctx) =>
        new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted by signal')))),
      { timeoutMs: 30 },
    );
    const id = await h.queued();
    await h.executor.execute(id);
    expect(await h.row(id)).toMatchObject({ status: 'timed_out', error: { code: 'timeout' } });
  });

  it('fails a run whose bot is not registered in this process', async () => {
    const id = await h.queued('ghost');
    await h.executor.execute(id);
    expect(await h.row(id)).toMatchObject({
      status: 'failed',
      error: { message: BOT_NOT_REGISTERED('ghost'), code: 'bot_not_registered' },
    });
  });

  it('publishes the id once the outcome is stored, then emits the finished event with its duration', async () => {
    h.bot(async () => [{ title: 't', message: 'm' }]);
    const id = await h.queued();
    const seenOnWake = deferred<string | undefined>();
    h.f.bus.subscribe(id, () => void h.row(id).then((r) => seenOnWake.resolve(r?.status)));
    await h.executor.execute(id);
    expect(await seenOnWake.promise).toBe('succeeded');
    expect(h.f.events).toEqual([
      {
        name: WEBHOOK_EVENTS.started,
        event: { invocationId: id, triggerId: 'trg_AAAAAAAAAAAAAAAA', botId: 'bot', accountId: 'acct', status: 'running' },
      },
      {
        name: WEBHOOK_EVENTS.succeeded,
        event: {
          invocationId: id,
          triggerId: 'trg_AAAAAAAAAAAAAAAA',
          botId: 'bot',
          accountId: 'acct',
          status: 'succeeded',
          durationMs: expect.any(Number),
        },
      },
    ]);
  });

  describe('cancel', () => {
    it('fires the signal of a run cancelled here and keeps the stored cancellation', async () => {
      const started = deferred();
      h.bot(async () => {
        started.resolve();
        await sleep(30);
        return [{ title: 'late', message: 'should not be stored' }];
      });
      const id = await h.queued();
      const running = h.executor.execute(id);
      await started.promise;
      const cancelledAt = new Date();
      // What InvocationService.cancel does for a running run: store cancelled, then fire the signal here.
      expect(
        await h.f.invocations.transition(id, 'running', 'cancelled', { finishedAt: cancelledAt, error: RunStop.cancelled().error }),
      ).toBe(true);
      expect(h.executor.abort(id, RunStop.cancelled())).toBe(true);
      await running;
      expect(h.calls[0].ctx.signal.reason).toBeInstanceOf(RunStop);
      expect(await h.row(id)).toMatchObject({ status: 'cancelled', outputs: null, finishedAt: cancelledAt, error: { code: 'cancelled' } });
      expect(h.eventNames()).toEqual([WEBHOOK_EVENTS.started]);
      expect(h.executor.abort(id, RunStop.cancelled())).toBe(false); // no longer here
    });

    it('hears a cancel stored elsewhere on the bus and fires the signal of its run', async () => {
      const started = deferred();
      h.bot((_inputs, ctx) => {
        started.resolve();
        return new Promise(() => void ctx); // ignores its signal
      });
      const id = await h.queued();
      const running = h.executor.execute(id);
      await started.promise;
      await h.f.invocations.transition(id, 'running', 'cancelled', { finishedAt: new Date(), error: RunStop.cancelled().error });
      await h.f.bus.publish(id); // as another node's cancel does
      await running;
      expect((h.calls[0].ctx.signal.reason as RunStop).status).toBe('cancelled');
      expect((await h.row(id))?.status).toBe('cancelled');
    });

    it('fires the signal as interrupted when the run was recovered elsewhere', async () => {
      const started = deferred();
      h.bot(() => {
        started.resolve();
        return new Promise(() => undefined);
      });
      const id = await h.queued();
      const running = h.executor.execute(id);
      await started.promise;
      await h.f.invocations.recoverInterrupted(id, { owner: h.executor.owner }, 'failed', {
        finishedAt: new Date(),
        error: RunStop.interrupted().error,
      });
      await h.f.bus.publish(id);
      await running;
      expect((h.calls[0].ctx.signal.reason as RunStop).error.code).toBe('interrupted');
      expect(await h.row(id)).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
    });
  });

  it('drops its outcome when it no longer owns the run (recovered and claimed by another process)', async () => {
    const first = deferred();
    const firstStarted = deferred();
    const second = deferred();
    const secondStarted = deferred();
    h.bot(async () => {
      if (h.calls.length === 1) {
        firstStarted.resolve();
        await first.promise;
        return [{ title: 'stale', message: 'from the hung process' }];
      }
      secondStarted.resolve();
      await second.promise;
      return [{ title: 'fresh', message: 'from the new owner' }];
    });
    const other = new InvocationExecutor(
      h.f.invocations,
      h.f.registry,
      h.f.bus,
      h.f.invocationEvents,
      h.f.options,
      h.f.outbox,
      h.f.finisher,
      h.f.clock,
    );
    const id = await h.queued();
    const hung = h.executor.execute(id);
    await firstStarted.promise;
    // Its lease ran out: another process requeued the run and claimed it.
    expect(await h.f.invocations.recoverInterrupted(id, { owner: h.executor.owner }, 'queued', {})).toBe(true);
    const taken = other.execute(id);
    await secondStarted.promise; // the other process claimed it
    first.resolve();
    await hung;
    expect(await h.row(id)).toMatchObject({ status: 'running', owner: other.owner, outputs: null });
    second.resolve();
    await taken;
    expect(await h.row(id)).toMatchObject({
      status: 'succeeded',
      owner: other.owner,
      outputs: [{ title: 'fresh', message: 'from the new owner' }],
    });
    expect(h.eventNames().filter((e) => e === WEBHOOK_EVENTS.succeeded)).toHaveLength(1);
  });

  it('renews the leases of its runs, so recovery does not take them', async () => {
    const clock = new ManualClock(Date.now());
    h.setUp({ runLeaseMs: 200 }, { clock });
    const release = deferred();
    const started = deferred();
    h.bot(async () => {
      started.resolve();
      await release.promise;
      return [];
    });
    const id = await h.queued();
    const running = h.executor.execute(id);
    await started.promise;
    await clock.tick(250);
    const now = () => new Date(clock.now());
    expect((await h.f.invocations.listExpiredLeases(now(), 10)).map((r) => r.id)).toEqual([id]);
    await h.executor.renewLeases();
    expect(await h.f.invocations.listExpiredLeases(now(), 10)).toEqual([]);
    release.resolve();
    await running;
  });

  describe('drain', () => {
    it('lets a run that finishes within the grace store its outcome', async () => {
      const started = deferred();
      h.bot(async () => {
        started.resolve();
        await sleep(40);
        return [{ title: 'done', message: 'in time' }];
      });
      const id = await h.queued();
      const running = h.executor.execute(id);
      await started.promise;
      await h.executor.drain(2000);
      expect(await h.row(id)).toMatchObject({ status: 'succeeded', outputs: [{ title: 'done', message: 'in time' }] });
      await running;
    });

    it('after the grace, fires the signal and stores the run failed (interrupted); nothing is left running', async () => {
      const started = deferred();
      h.bot(() => {
        started.resolve();
        return new Promise(() => undefined);
      });
      const id = await h.queued();
      void h.executor.execute(id);
      await started.promise;
      const start = Date.now();
      await h.executor.drain(50);
      expect(Date.now() - start).toBeGreaterThanOrEqual(45);
      expect(await h.row(id)).toMatchObject({ status: 'failed', outputs: [], error: { message: RUN_INTERRUPTED, code: 'interrupted' } });
      expect(h.calls[0].ctx.signal.aborted).toBe(true);
      expect(await h.f.invocations.listExpiredLeases(new Date(Date.now() + 3_600_000), 10)).toEqual([]); // nothing left running
    });

    it('keeps the leases of its runs fresh through the grace', async () => {
      const clock = new ManualClock(Date.now());
      h.setUp({ runLeaseMs: 300 }, { clock }); // renewed every 100 ms
      const started = deferred();
      const release = deferred();
      h.bot(async () => {
        started.resolve();
        await release.promise;
        return [];
      });
      const id = await h.queued();
      const running = h.executor.execute(id);
      await started.promise;
      const drained = h.executor.drain(2000);
      // 700 ms in steps of 100 (the renewal's period): the first lease ended at 300 ms.
      for (let ms = 0; ms < 700; ms += 100) await clock.tick(100);
      expect(await h.f.invocations.listExpiredLeases(new Date(clock.now()), 10)).toEqual([]);
      // Renewed, not made endless: a lease past the last renewal's (at 700 ms, to 1000 ms) has run out.
      expect((await h.f.invocations.listExpiredLeases(new Date(clock.now() + 301), 10)).map((r) => r.id)).toEqual([id]);
      release.resolve();
      await drained;
      await running;
      expect((await h.row(id))?.status).toBe('succeeded');
    });

    it('claims nothing once draining: a queued run stays queued for another process or the next start', async () => {
      h.bot(async () => []);
      const id = await h.queued();
      expect(h.executor.draining).toBe(false);
      await h.executor.drain(100);
      expect(h.executor.draining).toBe(true);
      await h.executor.execute(id);
      expect(h.calls).toHaveLength(0);
      expect(await h.row(id)).toMatchObject({ status: 'queued', startedAt: null, owner: null });
    });
  });
});
