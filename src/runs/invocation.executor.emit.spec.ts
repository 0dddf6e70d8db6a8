import { Logger } from '@nestjs/common';
import { deferred } from '../../test/fakes/webhook-fakes.js';
import { executorHarness } from '../../test/fakes/executor-harness.js';
import { until } from '../../test/helpers/http.js';

/** An `invocation.output` delivery's body, as much of it as the specs read. */
interface OutputBody {
  data: { invocation: { outputs: unknown[] }; output?: { index: number } };
}

describe('InvocationExecutor: ctx.emit', () => {
  const h = executorHarness();

  beforeAll(() => Logger.overrideLogger(false)); // the executor's notes on dropped outcomes
  beforeEach(() => h.setUp());

  const out = (i: number) => ({ title: `step ${i}`, message: String(i) });

  it('stores each emitted output at once, in order, then the returned ones after them', async () => {
    const seen: unknown[] = [];
    const stopWatching = h.f.bus.watchChanges((change) => seen.push(change));
    const gate = deferred();
    let id = '';
    h.bot(async (_inputs, ctx) => {
      expect(await ctx.emit(out(1))).toBe(true);
      void ctx.emit({ ...out(2), extra: 'dropped' } as never); // not awaited: still stored before the end
      await gate.promise;
      return [out(3)];
    });
    id = await h.queued();
    const running = h.executor.execute(id);
    await until(async () => (await h.row(id))?.outputs?.length === 2);
    expect(await h.row(id)).toMatchObject({ status: 'running', outputs: [out(1), out(2)] });
    gate.resolve();
    await running;
    expect(await h.row(id)).toMatchObject({ status: 'succeeded', outputs: [out(1), out(2), out(3)] });
    expect(seen.filter((c) => (c as { kind?: string }).kind === 'output')).toHaveLength(2);
    stopWatching();
  });

  it('keeps what was emitted when the bot then fails, times out or returns too much', async () => {
    h.setUp({ maxOutputBytes: 200 });
    h.bot(
      async (inputs, ctx) => {
        await ctx.emit(out(1));
        if (inputs.kind === 'throw') throw new Error('boom');
        if (inputs.kind === 'big') return [{ title: 'x', message: 'y'.repeat(300) }];
        return new Promise(() => undefined);
      },
      { timeoutMs: 60 },
    );
    const failed = await h.queued('bot', { kind: 'throw' });
    const big = await h.queued('bot', { kind: 'big' });
    const slow = await h.queued('bot', { kind: 'hang' });
    for (const id of [failed, big, slow]) await h.executor.execute(id);
    expect(await h.row(failed)).toMatchObject({ status: 'failed', outputs: [out(1)], error: { message: 'boom' } });
    expect(await h.row(big)).toMatchObject({ status: 'failed', outputs: [out(1)], error: { code: 'outputs_too_large' } });
    expect(await h.row(slow)).toMatchObject({ status: 'timed_out', outputs: [out(1)], error: { code: 'timeout' } });
  });

  it('counts emitted outputs in maxOutputBytes: the one that goes over fails the run and is not stored', async () => {
    h.setUp({ maxOutputBytes: 100 });
    const results: boolean[] = [];
    h.bot(async (_inputs, ctx) => {
      for (let i = 1; i <= 10; i++) results.push(await ctx.emit({ title: `t${i}`, message: 'm'.repeat(20) }));
      return [];
    });
    const id = await h.queued();
    await h.executor.execute(id);
    const stored = (await h.row(id))!;
    expect(stored).toMatchObject({ status: 'failed', error: { code: 'outputs_too_large' } });
    expect(Buffer.byteLength(JSON.stringify(stored.outputs))).toBeLessThanOrEqual(100);
    expect(stored.outputs).toHaveLength(results.filter(Boolean).length);
    expect(results.filter(Boolean).length).toBeGreaterThan(0);
    expect(results.at(-1)).toBe(false);
    expect(h.calls[0].ctx.signal.aborted).toBe(true);
  });

  it('fails the run on an invalid emitted output (invalid_outputs)', async () => {
    h.bot(async (_inputs, ctx) => {
      expect(await ctx.emit({ title: 1 } as never)).toBe(false);
      return [out(2)];
    });
    const id = await h.queued();
    await h.executor.execute(id);
    expect(await h.row(id)).toMatchObject({ status: 'failed', outputs: [], error: { code: 'invalid_outputs' } });
  });

  it('ignores emit after the run ended (timed out or cancelled): resolves false, stores nothing', async () => {
    const late = deferred<boolean>();
    h.bot(
      async (_inputs, ctx) => {
        await ctx.emit(out(1));
        ctx.signal.addEventListener('abort', () => void ctx.emit(out(2)).then(late.resolve));
        return new Promise(() => undefined);
      },
      { timeoutMs: 50 },
    );
    const id = await h.queued();
    await h.executor.execute(id);
    expect(await late.promise).toBe(false);
    expect(await h.row(id)).toMatchObject({ status: 'timed_out', outputs: [out(1)] });
    // After a cancel stored elsewhere, the conditional append finds the run no longer running.
    const gate = deferred();
    let emitAfterCancel!: () => Promise<boolean>;
    h.bot(
      async (_inputs, ctx) => {
        emitAfterCancel = () => ctx.emit(out(3));
        await gate.promise;
        return [];
      },
      { id: 'other' },
    );
    const other = await h.queued('other');
    const running = h.executor.execute(other);
    await until(async () => (await h.row(other))?.status === 'running');
    await h.f.invocations.transition(other, 'running', 'cancelled', { finishedAt: new Date() });
    expect(await emitAfterCancel()).toBe(false);
    gate.resolve();
    await running;
    expect(await h.row(other)).toMatchObject({ status: 'cancelled', outputs: null });
  });

  it('a retried run keeps what its earlier attempt emitted and appends after it', async () => {
    h.bot(async (_inputs, ctx) => {
      await ctx.emit(out(2));
      return [out(3)];
    });
    const id = await h.queued();
    await h.f.invocations.markRunning(id, new Date(), 'dead', new Date(0));
    await h.f.invocations.appendOutput(id, 'dead', out(1));
    await h.f.invocations.recoverInterrupted(id, { owner: 'dead' }, 'queued', {});
    await h.executor.execute(id);
    expect(await h.row(id)).toMatchObject({ status: 'succeeded', outputs: [out(1), out(2), out(3)] });
  });

  it("gives each invocation.output delivery its output alone and its place: after a retried attempt's, past one not stored", async () => {
    const triggerId = 'trg_AAAAAAAAAAAAAAAA';
    await h.f.callbacks.saveCallback(
      { triggerId, url: 'https://receiver.example.com/runs', events: ['invocation.output'], secret: 'whsec_AAAA' },
      new Date(),
    );
    h.bot(async (_inputs, ctx) => {
      // Emitted together: step 4 is accepted before step 3's append fails.
      await Promise.all([2, 3, 4].map((i) => ctx.emit(out(i))));
      return [];
    });
    const id = await h.queued();
    await h.f.invocations.markRunning(id, new Date(), 'dead', new Date(0));
    await h.f.invocations.appendOutput(id, 'dead', out(1));
    await h.f.invocations.recoverInterrupted(id, { owner: 'dead' }, 'queued', {});
    // The storage fails the append of step 3 once: it is not stored, and the next output takes its place.
    const append = h.f.invocations.appendOutput.bind(h.f.invocations);
    jest
      .spyOn(h.f.invocations, 'appendOutput')
      .mockImplementation((...args) => (args[2].title === 'step 3' ? Promise.reject(new Error('connection lost')) : append(...args)));
    await h.executor.execute(id);
    expect(await h.row(id)).toMatchObject({ status: 'succeeded', outputs: [out(1), out(2), out(4)] });
    const outputDeliveries = (await h.f.callbacks.listByInvocation(id)).filter((d) => d.event === 'invocation.output');
    const bodies = await Promise.all(
      outputDeliveries.map(async (d) => JSON.parse((await h.f.callbacks.findDelivery(d.id))!.body) as OutputBody),
    );
    // Listed in no set order (stored in the same ms): by their index.
    bodies.sort((a, b) => (a.data.output?.index ?? -1) - (b.data.output?.index ?? -1));
    expect(bodies.map((b) => [b.data.invocation.outputs, b.data.output])).toEqual([
      [[out(2)], { index: 1 }],
      [[out(4)], { index: 2 }],
    ]);
  });
});
