/**
 * `ctx.emit()`: outputs a bot publishes while it runs are stored as they come, shown by status while it
 * runs, and are the first of the run's outputs in sync, status and history; they count in maxOutputBytes;
 * an emit after the run ended stores nothing.
 */
import { WebhookBot, WebhookBotHost, type BotContext, type BotOutput } from '../../src/index.js';
import { InvocationExecutor } from '../../src/runs/invocation.executor.js';
import { EmitBot } from '../fixtures/bots.js';
import { cancelRun, eventually, getStatus, sleep, startRun, syncInvocation } from '../helpers/http.js';
import {
  UNTHROTTLED,
  createTrigger,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  type TestTrigger,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';

/** Emits every 30 ms and ignores its signal; its time limit (150 ms) ends the run while it keeps emitting. */
@WebhookBot({ id: 'emit-forever', accountId: 'acct', timeoutMs: 150 })
class EmitForeverBot extends WebhookBotHost {
  static lateResults: boolean[] = [];
  async main(_inputs: unknown, ctx: BotContext): Promise<BotOutput[]> {
    for (let i = 1; i <= 20; i++) {
      await sleep(30);
      // Late: called once the time limit fired (an emit called before, and stored while the signal fired, is not late).
      const late = ctx.signal.aborted;
      const stored = await ctx.emit({ title: `tick ${i}`, message: String(i) });
      if (late) EmitForeverBot.lateResults.push(stored);
    }
    return [];
  }
}

const step = (i: number) => ({ title: `step ${i}`, message: String(i) });
const MAX = 2048;

describeOnEveryAdapterAndDatabase('emitted outputs', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;
  let emit: TestTrigger;
  let forever: TestTrigger;

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      database,
      providers: [EmitBot, EmitForeverBot],
      options: { rateLimits: UNTHROTTLED, maxOutputBytes: MAX },
    });
    emit = await createTrigger(t, 'emit');
    forever = await createTrigger(t, 'emit-forever');
    await t.admin.setCredits('acct', 1000);
  });
  afterAll(() => t.close());

  it('shows emitted outputs first, then the returned ones, in sync, status and history', async () => {
    const id = await startRun(emit, { n: 3, ms: 5 });
    const expected = [step(1), step(2), step(3), { title: 'returned', message: '3' }];
    expect((await syncInvocation(emit, id)).body).toEqual({ success: true, outputs: expected });
    expect((await getStatus(emit, id)).body).toMatchObject({ success: true, invocation: { status: 'succeeded' }, outputs: expected });
    expect((await t.admin.listInvocations('emit', { limit: 10 })).find((i) => i.id === id)).toMatchObject({ outputs: expected });
    expect((await t.admin.getInvocation(id))?.outputs).toEqual(expected);
  });

  it('stores each output as it is emitted: status shows them while the run is still running', async () => {
    const id = await startRun(emit, { n: 3, ms: 300 });
    const running = await eventually('two outputs while running', 3000, async () => {
      const res = await getStatus(emit, id);
      return (res.body.outputs as unknown[] | undefined)?.length === 2 ? res : undefined;
    });
    expect(running.body).toMatchObject({ success: true, invocation: { status: 'running' }, outputs: [step(1), step(2)] });
    expect((await syncInvocation(emit, id)).body.outputs).toHaveLength(4);
  });

  it('counts emitted outputs in maxOutputBytes: going over fails the run, keeping what fitted', async () => {
    const id = await startRun(emit, { n: 10, ms: 0, size: 400 });
    const body = (await syncInvocation(emit, id)).body;
    expect(body).toMatchObject({ success: false, status: 'failed', error: { code: 'outputs_too_large' } });
    const outputs = body.outputs as BotOutput[];
    expect(outputs.length).toBeGreaterThan(0);
    expect(outputs.length).toBeLessThan(10);
    expect(Buffer.byteLength(JSON.stringify(outputs))).toBeLessThanOrEqual(MAX);
    expect(outputs.map((o) => o.title)).toEqual(outputs.map((_o, i) => `step ${i + 1}`));
  });

  it('accepts an emitted output that brings the outputs to exactly maxOutputBytes; one byte more fails the run and is not stored', async () => {
    const size = MAX - Buffer.byteLength(JSON.stringify([step(1)]));
    const exact = await startRun(emit, { n: 1, ms: 0, size, returns: false });
    const stored = [{ title: 'step 1', message: '1' + 'x'.repeat(size) }];
    expect(Buffer.byteLength(JSON.stringify(stored))).toBe(MAX);
    expect((await syncInvocation(emit, exact)).body).toEqual({ success: true, outputs: stored });
    const over = await startRun(emit, { n: 1, ms: 0, size: size + 1, returns: false });
    expect((await syncInvocation(emit, over)).body).toEqual({
      success: false,
      status: 'failed',
      outputs: [],
      error: { message: expect.stringContaining(`${MAX + 1} bytes of JSON, over the limit of ${MAX}`), code: 'outputs_too_large' },
    });
  });

  it('keeps what was emitted before a cancel, and nothing after it', async () => {
    const id = await startRun(emit, { n: 20, ms: 100 });
    await eventually('a first output', 3000, async () => ((await getStatus(emit, id)).body.outputs as unknown[] | undefined)?.length);
    expect((await cancelRun(emit, id)).status).toBe(200);
    const after = (await syncInvocation(emit, id)).body;
    expect(after).toMatchObject({ success: false, status: 'cancelled' });
    const kept = after.outputs as BotOutput[];
    expect(kept.length).toBeGreaterThanOrEqual(1);
    await t.app.get(InvocationExecutor).settled(id); // the bot is over, its late outputs refused or never made
    expect((await syncInvocation(emit, id)).body.outputs).toEqual(kept);
  });

  it('ignores emit after the time limit ended the run: false to the bot, nothing stored', async () => {
    EmitForeverBot.lateResults = [];
    const id = await startRun(forever);
    const body = (await syncInvocation(forever, id)).body;
    expect(body).toMatchObject({ success: false, status: 'timed_out' });
    const kept = (body.outputs as BotOutput[]).length;
    expect(kept).toBeGreaterThanOrEqual(2);
    await eventually('a late emit', 2000, () => (EmitForeverBot.lateResults.length > 0 ? true : undefined));
    expect(EmitForeverBot.lateResults.every((stored) => stored === false)).toBe(true);
    expect((await syncInvocation(forever, id)).body.outputs).toHaveLength(kept);
  });
});
