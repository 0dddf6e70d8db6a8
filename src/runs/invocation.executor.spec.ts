import { Logger } from '@nestjs/common';
import type { BotContext, BotInputs } from '../bots/bot.types.js';
import { BOT_NOT_REGISTERED, INVALID_OUTPUTS, RUN_INTERRUPTED, RUN_TIMED_OUT } from '../errors/webhook-trigger.messages.js';
import { WEBHOOK_EVENTS } from '../events/invocation.events.js';
import type { WebhookTriggerModuleOptions } from '../options/webhook-trigger-options.interface.js';
import type { NewInvocation } from '../persistence/records.js';
import { createWebhookFakes, deferred, type BotMain, type WebhookFakes } from '../../test/fakes/webhook-fakes.js';
import { InvocationExecutor } from './invocation.executor.js';
import { RunStop } from './run-stop.reasons.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(probe: () => Promise<boolean>, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(5);
  }
}

describe('InvocationExecutor', () => {
  let f: WebhookFakes;
  let executor: InvocationExecutor;
  let calls: Array<{ inputs: BotInputs; ctx: BotContext }>;

  function setUp(options: WebhookTriggerModuleOptions = {}): void {
    f = createWebhookFakes(options);
    executor = new InvocationExecutor(f.invocations, f.registry, f.bus, f.invocationEvents, f.options, f.outbox, f.finisher);
    calls = [];
  }

  /** Registers bot `id` whose `main` records its call and then does `main`. */
  function bot(main: BotMain, fields: { id?: string; timeoutMs?: number } = {}): void {
    f.addBot({
      id: fields.id ?? 'bot',
      timeoutMs: fields.timeoutMs,
      main: (inputs, ctx) => {
        calls.push({ inputs, ctx });
        return main(inputs, ctx);
      },
    });
  }

  let n = 0;
  async function queued(botId = 'bot', inputs: BotInputs = { n: 1 }): Promise<string> {
    const invocation: NewInvocation = {
      id: `inv_${String(++n).padStart(22, '0')}`,
      triggerId: 'trg_AAAAAAAAAAAAAAAA',
      botId,
      accountId: 'acct',
      inputs,
      credits: 1,
      idempotencyKey: null,
      requestHash: null,
      createdAt: new Date(),
    };
    await f.invocations.insert(invocation);
    return invocation.id;
  }

  const row = (id: string) => f.invocations.findById(id);
  const eventNames = () => f.events.map((e) => e.name);

  beforeAll(() => Logger.overrideLogger(false)); // the executor's notes on dropped outcomes
  beforeEach(() => setUp());

  it('runs a queued run once, even when executed twice at the same time or again later', async () => {
    bot(async () => [{ title: 't', message: 'm' }]);
    const id = await queued();
    await Promise.all([executor.execute(id), executor.execute(id)]);
    await executor.execute(id);
    expect(calls).toHaveLength(1);
    expect((await row(id))?.status).toBe('succeeded');
    expect(eventNames()).toEqual([WEBHOOK_EVENTS.started, WEBHOOK_EVENTS.succeeded]);
  });

  it('stores a success with its outputs (title and message only), owned and timed, and tells the bot who it runs for', async () => {
    bot(async () => [{ title: 'Weather', message: 'Sunny', secret: 'not for the caller' } as never]);
    const id = await queued('bot', { city: 'Oslo' });
    const before = Date.now();
    await executor.execute(id);
    const stored = (await row(id))!;
    expect(stored).toMatchObject({ status: 'succeeded', error: null, owner: executor.owner });
    expect(stored.outputs).toEqual([{ title: 'Weather', message: 'Sunny' }]); // toEqual: no field beyond these two
    expect(stored.startedAt!.getTime()).toBeGreaterThanOrEqual(before);
    expect(stored.finishedAt!.getTime()).toBeGreaterThanOrEqual(stored.startedAt!.getTime());
    expect(calls[0].inputs).toEqual({ city: 'Oslo' });
    expect(calls[0].ctx).toMatchObject({ invocationId: id, triggerId: 'trg_AAAAAAAAAAAAAAAA', botId: 'bot', accountId: 'acct' });
    expect(calls[0].ctx.signal.aborted).toBe(false);
  });

  it("stores a bot's error as failed with its message", async () => {
    bot(async (inputs) => {
      if (inputs.kind === 'string') throw 'plain text'; // eslint-disable-line @typescript-eslint/only-throw-error -- a bot that throws a non-Error is what this tests
      throw new Error('upstream answered 500');
    });
    const a = await queued('bot', { kind: 'error' });
    const b = await queued('bot', { kind: 'string' });
    await executor.execute(a);
    await executor.execute(b);
    expect(await row(a)).toMatchObject({ status: 'failed', outputs: [], error: { message: 'upstream answered 500' } });
    expect((await row(a))?.error?.code).toBeUndefined();
    expect((await row(b))?.error).toEqual({ message: 'plain text' });
    expect(eventNames().filter((e) => e === WEBHOOK_EVENTS.failed)).toHaveLength(2);
  });

  it('stores invalid outputs as failed (invalid_outputs)', async () => {
    bot(async (inputs) => inputs.outputs as never);
    const ids = [
      await queued('bot', { outputs: [{ title: 't' }] }),
      await queued('bot', { outputs: 'done' }),
      await queued('bot', { outputs: [null] }),
    ];
    for (const id of ids) await executor.execute(id);
    for (const id of ids) {
      expect(await row(id)).toMatchObject({ status: 'failed', outputs: [], error: { message: INVALID_OUTPUTS, code: 'invalid_outputs' } });
    }
  });

  it("ends a run at its bot's time limit as timed_out, even when the bot ignores its signal", async () => {
    bot(() => new Promise(() => undefined), { timeoutMs: 40 });
    const id = await queued();
    const start = Date.now();
    await executor.execute(id);
    expect(Date.now() - start).toBeLessThan(1000);
    expect(await row(id)).toMatchObject({ status: 'timed_out', outputs: [], error: { message: RUN_TIMED_OUT(40), code: 'timeout' } });
    expect(calls[0].ctx.signal.aborted).toBe(true);
    expect(eventNames()).toEqual([WEBHOOK_EVENTS.started, WEBHOOK_EVENTS.timed_out]);
  });

  it('ends as timed_out, not as its own failure, a bot that rejects because its signal fired', async () => {
    bot(
      (_inputs, ctx) =>
        new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted by signal')))),
      { timeoutMs: 30 },
    );
    const id = await queued();
    await executor.execute(id);
    expect(await row(id)).toMatchObject({ status: 'timed_out', error: { code: 'timeout' } });
  });

  it('fails a run whose bot is not registered in this process', async () => {
    const id = await queued('ghost');
    await executor.execute(id);
    expect(await row(id)).toMatchObject({ status: 'failed', error: { message: BOT_NOT_REGISTERED('ghost'), code: 'bot_not_registered' } });
  });

  it('publishes the id once the outcome is stored, then emits the finished event with its duration', async () => {
    bot(async () => [{ title: 't', message: 'm' }]);
    const id = await queued();
    const seenOnWake = deferred<string | undefined>();
    f.bus.subscribe(id, () => void row(id).then((r) => seenOnWake.resolve(r?.status)));
    await executor.execute(id);
    expect(await seenOnWake.promise).toBe('succeeded');
    expect(f.events).toEqual([
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
      bot(async () => {
        started.resolve();
        await sleep(30);
        return [{ title: 'late', message: 'should not be stored' }];
      });
      const id = await queued();
      const running = executor.execute(id);
      await started.promise;
      const cancelledAt = new Date();
      // What InvocationService.cancel does for a running run: store cancelled, then fire the signal here.
      expect(
        await f.invocations.transition(id, 'running', 'cancelled', { finishedAt: cancelledAt, error: RunStop.cancelled().error }),
      ).toBe(true);
      expect(executor.abort(id, RunStop.cancelled())).toBe(true);
      await running;
      expect(calls[0].ctx.signal.reason).toBeInstanceOf(RunStop);
      expect(await row(id)).toMatchObject({ status: 'cancelled', outputs: null, finishedAt: cancelledAt, error: { code: 'cancelled' } });
      expect(eventNames()).toEqual([WEBHOOK_EVENTS.started]);
      expect(executor.abort(id, RunStop.cancelled())).toBe(false); // no longer here
    });

    it('hears a cancel stored elsewhere on the bus and fires the signal of its run', async () => {
      const started = deferred();
      bot((_inputs, ctx) => {
        started.resolve();
        return new Promise(() => void ctx); // ignores its signal
      });
      const id = await queued();
      const running = executor.execute(id);
      await started.promise;
      await f.invocations.transition(id, 'running', 'cancelled', { finishedAt: new Date(), error: RunStop.cancelled().error });
      await f.bus.publish(id); // as another node's cancel does
      await running;
      expect((calls[0].ctx.signal.reason as RunStop).status).toBe('cancelled');
      expect((await row(id))?.status).toBe('cancelled');
    });

    it('fires the signal as interrupted when the run was recovered elsewhere', async () => {
      const started = deferred();
      bot(() => {
        started.resolve();
        return new Promise(() => undefined);
      });
      const id = await queued();
      const running = executor.execute(id);
      await started.promise;
      await f.invocations.recoverInterrupted(id, { owner: executor.owner }, 'failed', {
        finishedAt: new Date(),
        error: RunStop.interrupted().error,
      });
      await f.bus.publish(id);
      await running;
      expect((calls[0].ctx.signal.reason as RunStop).error.code).toBe('interrupted');
      expect(await row(id)).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
    });
  });

  it('drops its outcome when it no longer owns the run (recovered and claimed by another process)', async () => {
    const first = deferred();
    const firstStarted = deferred();
    const second = deferred();
    bot(async () => {
      if (calls.length === 1) {
        firstStarted.resolve();
        await first.promise;
        return [{ title: 'stale', message: 'from the hung process' }];
      }
      await second.promise;
      return [{ title: 'fresh', message: 'from the new owner' }];
    });
    const other = new InvocationExecutor(f.invocations, f.registry, f.bus, f.invocationEvents, f.options, f.outbox, f.finisher);
    const id = await queued();
    const hung = executor.execute(id);
    await firstStarted.promise;
    // Its lease ran out: another process requeued the run and claimed it.
    expect(await f.invocations.recoverInterrupted(id, { owner: executor.owner }, 'queued', {})).toBe(true);
    const taken = other.execute(id);
    await sleep(5);
    first.resolve();
    await hung;
    expect(await row(id)).toMatchObject({ status: 'running', owner: other.owner, outputs: null });
    second.resolve();
    await taken;
    expect(await row(id)).toMatchObject({
      status: 'succeeded',
      owner: other.owner,
      outputs: [{ title: 'fresh', message: 'from the new owner' }],
    });
    expect(eventNames().filter((e) => e === WEBHOOK_EVENTS.succeeded)).toHaveLength(1);
  });

  it('renews the leases of its runs, so recovery does not take them', async () => {
    setUp({ runLeaseMs: 200 });
    const release = deferred();
    bot(async () => {
      await release.promise;
      return [];
    });
    const id = await queued();
    const running = executor.execute(id);
    await sleep(250);
    expect((await f.invocations.listExpiredLeases(new Date(), 10)).map((r) => r.id)).toEqual([id]);
    await executor.renewLeases();
    expect(await f.invocations.listExpiredLeases(new Date(), 10)).toEqual([]);
    release.resolve();
    await running;
  });

  describe('drain', () => {
    it('lets a run that finishes within the grace store its outcome', async () => {
      bot(async () => {
        await sleep(40);
        return [{ title: 'done', message: 'in time' }];
      });
      const id = await queued();
      const running = executor.execute(id);
      await sleep(5);
      await executor.drain(2000);
      expect(await row(id)).toMatchObject({ status: 'succeeded', outputs: [{ title: 'done', message: 'in time' }] });
      await running;
    });

    it('after the grace, fires the signal and stores the run failed (interrupted); nothing is left running', async () => {
      bot(() => new Promise(() => undefined));
      const id = await queued();
      void executor.execute(id);
      await sleep(5);
      const start = Date.now();
      await executor.drain(50);
      expect(Date.now() - start).toBeGreaterThanOrEqual(45);
      expect(await row(id)).toMatchObject({ status: 'failed', outputs: [], error: { message: RUN_INTERRUPTED, code: 'interrupted' } });
      expect(calls[0].ctx.signal.aborted).toBe(true);
      expect(await f.invocations.listExpiredLeases(new Date(Date.now() + 3_600_000), 10)).toEqual([]); // nothing left running
    });

    it('keeps the leases of its runs fresh through the grace', async () => {
      setUp({ runLeaseMs: 300 }); // renewed every 100 ms
      bot(async () => {
        await sleep(900);
        return [];
      });
      const id = await queued();
      const running = executor.execute(id);
      await sleep(5);
      const drained = executor.drain(2000);
      await sleep(700); // the first lease ended at ~300 ms
      expect(await f.invocations.listExpiredLeases(new Date(), 10)).toEqual([]);
      await drained;
      await running;
      expect((await row(id))?.status).toBe('succeeded');
    });

    it('claims nothing once draining: a queued run stays queued for another process or the next start', async () => {
      bot(async () => []);
      const id = await queued();
      expect(executor.draining).toBe(false);
      await executor.drain(100);
      expect(executor.draining).toBe(true);
      await executor.execute(id);
      expect(calls).toHaveLength(0);
      expect(await row(id)).toMatchObject({ status: 'queued', startedAt: null, owner: null });
    });
  });
  describe('ctx.emit', () => {
    const out = (i: number) => ({ title: `step ${i}`, message: String(i) });

    it('stores each emitted output at once, in order, then the returned ones after them', async () => {
      const seen: unknown[] = [];
      const stopWatching = f.bus.watchChanges((change) => seen.push(change));
      const gate = deferred();
      let id = '';
      bot(async (_inputs, ctx) => {
        expect(await ctx.emit(out(1))).toBe(true);
        void ctx.emit({ ...out(2), extra: 'dropped' } as never); // not awaited: still stored before the end
        await gate.promise;
        return [out(3)];
      });
      id = await queued();
      const running = executor.execute(id);
      await until(async () => (await row(id))?.outputs?.length === 2);
      expect(await row(id)).toMatchObject({ status: 'running', outputs: [out(1), out(2)] });
      gate.resolve();
      await running;
      expect(await row(id)).toMatchObject({ status: 'succeeded', outputs: [out(1), out(2), out(3)] });
      expect(seen.filter((c) => (c as { kind?: string }).kind === 'output')).toHaveLength(2);
      stopWatching();
    });

    it('keeps what was emitted when the bot then fails, times out or returns too much', async () => {
      setUp({ maxOutputBytes: 200 });
      bot(
        async (inputs, ctx) => {
          await ctx.emit(out(1));
          if (inputs.kind === 'throw') throw new Error('boom');
          if (inputs.kind === 'big') return [{ title: 'x', message: 'y'.repeat(300) }];
          return new Promise(() => undefined);
        },
        { timeoutMs: 60 },
      );
      const failed = await queued('bot', { kind: 'throw' });
      const big = await queued('bot', { kind: 'big' });
      const slow = await queued('bot', { kind: 'hang' });
      for (const id of [failed, big, slow]) await executor.execute(id);
      expect(await row(failed)).toMatchObject({ status: 'failed', outputs: [out(1)], error: { message: 'boom' } });
      expect(await row(big)).toMatchObject({ status: 'failed', outputs: [out(1)], error: { code: 'outputs_too_large' } });
      expect(await row(slow)).toMatchObject({ status: 'timed_out', outputs: [out(1)], error: { code: 'timeout' } });
    });

    it('counts emitted outputs in maxOutputBytes: the one that goes over fails the run and is not stored', async () => {
      setUp({ maxOutputBytes: 100 });
      const results: boolean[] = [];
      bot(async (_inputs, ctx) => {
        for (let i = 1; i <= 10; i++) results.push(await ctx.emit({ title: `t${i}`, message: 'm'.repeat(20) }));
        return [];
      });
      const id = await queued();
      await executor.execute(id);
      const stored = (await row(id))!;
      expect(stored).toMatchObject({ status: 'failed', error: { code: 'outputs_too_large' } });
      expect(Buffer.byteLength(JSON.stringify(stored.outputs))).toBeLessThanOrEqual(100);
      expect(stored.outputs).toHaveLength(results.filter(Boolean).length);
      expect(results.filter(Boolean).length).toBeGreaterThan(0);
      expect(results.at(-1)).toBe(false);
      expect(calls[0].ctx.signal.aborted).toBe(true);
    });

    it('fails the run on an invalid emitted output (invalid_outputs)', async () => {
      bot(async (_inputs, ctx) => {
        expect(await ctx.emit({ title: 1 } as never)).toBe(false);
        return [out(2)];
      });
      const id = await queued();
      await executor.execute(id);
      expect(await row(id)).toMatchObject({ status: 'failed', outputs: [], error: { code: 'invalid_outputs' } });
    });

    it('ignores emit after the run ended (timed out or cancelled): resolves false, stores nothing', async () => {
      const late = deferred<boolean>();
      bot(
        async (_inputs, ctx) => {
          await ctx.emit(out(1));
          ctx.signal.addEventListener('abort', () => void ctx.emit(out(2)).then(late.resolve));
          return new Promise(() => undefined);
        },
        { timeoutMs: 50 },
      );
      const id = await queued();
      await executor.execute(id);
      expect(await late.promise).toBe(false);
      expect(await row(id)).toMatchObject({ status: 'timed_out', outputs: [out(1)] });
      // After a cancel stored elsewhere, the conditional append finds the run no longer running.
      const gate = deferred();
      let emitAfterCancel!: () => Promise<boolean>;
      bot(
        async (_inputs, ctx) => {
          emitAfterCancel = () => ctx.emit(out(3));
          await gate.promise;
          return [];
        },
        { id: 'other' },
      );
      const other = await queued('other');
      const running = executor.execute(other);
      await until(async () => (await row(other))?.status === 'running');
      await f.invocations.transition(other, 'running', 'cancelled', { finishedAt: new Date() });
      expect(await emitAfterCancel()).toBe(false);
      gate.resolve();
      await running;
      expect(await row(other)).toMatchObject({ status: 'cancelled', outputs: null });
    });

    it('a retried run keeps what its earlier attempt emitted and appends after it', async () => {
      bot(async (_inputs, ctx) => {
        await ctx.emit(out(2));
        return [out(3)];
      });
      const id = await queued();
      await f.invocations.markRunning(id, new Date(), 'dead', new Date(0));
      await f.invocations.appendOutput(id, 'dead', out(1));
      await f.invocations.recoverInterrupted(id, { owner: 'dead' }, 'queued', {});
      await executor.execute(id);
      expect(await row(id)).toMatchObject({ status: 'succeeded', outputs: [out(1), out(2), out(3)] });
    });
  });
});
