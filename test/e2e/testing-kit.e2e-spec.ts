/**
 * The testing kit (`nestjs-webhook-triggers/testing`) as a user's spec would use it: the real module in memory,
 * on a clock the spec moves, callbacks captured; and runBot for a bot's main() alone. It must catch what a user
 * wants caught: a bot that ignores its signal, outputs over the limit, a 402 when credits run out.
 */
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import {
  Clock,
  verifyWebhookSignature,
  WebhookBot,
  WebhookBotHost,
  type BotContext,
  type BotInputs,
  type BotOutput,
} from '../../src/index.js';
import {
  TESTING_MISSING_PROVIDER,
  TESTING_NOT_A_BOT,
  TESTING_PACKAGE_MISSING,
  TESTING_UNKNOWN_BOT,
} from '../../src/errors/webhook-trigger.messages.js';
import {
  createWebhookTriggerHarness,
  runBot,
  TestClock,
  WebhookTriggerHarness,
  WebhookTriggerTestingModule,
} from '../../src/testing/index.js';

@Injectable()
class Summarizer {
  summarize(text: string): string {
    return text.split(/\s+/).slice(0, 3).join(' ');
  }
}

@WebhookBot({ id: 'summarize', accountId: 'acme', credits: 2 })
class SummarizeBot extends WebhookBotHost {
  constructor(private readonly summarizer: Summarizer) {
    super();
  }

  async main(inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    if (typeof inputs.text !== 'string') throw new Error('inputs.text must be a string');
    await ctx.emit({ title: 'Started', message: `${inputs.text.length} characters` });
    return [{ title: 'Summary', message: this.summarizer.summarize(inputs.text) }];
  }
}

/** Never returns and never looks at its signal: only the time limit ends its runs. */
@WebhookBot({ id: 'stuck', accountId: 'acme', timeoutMs: 60_000 })
class StuckBot extends WebhookBotHost {
  main(): Promise<BotOutput[]> {
    return new Promise(() => undefined);
  }
}

/** Waits for its signal, then ends (a well-behaved long run). */
@WebhookBot({ id: 'patient', accountId: 'acme' })
class PatientBot extends WebhookBotHost {
  main(_inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    return new Promise((_resolve, reject) => {
      if (ctx.signal.aborted) reject(ctx.signal.reason as Error);
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
    });
  }
}

/** docs/testing.md's SlowBot: listens for its signal without looking whether it already fired. */
@WebhookBot({ id: 'listening', accountId: 'acme' })
class ListeningBot extends WebhookBotHost {
  main(_inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error)));
  }
}

@WebhookBot({ id: 'verbose', accountId: 'acme' })
class VerboseBot extends WebhookBotHost {
  async main(inputs: BotInputs): Promise<BotOutput[]> {
    return [{ title: 'All of it', message: 'x'.repeat(Number(inputs.size)) }];
  }
}

/** Waits 5 s on the module's clock (a poll, a back-off) before it answers. */
@WebhookBot({ id: 'poller', accountId: 'acme' })
class PollerBot extends WebhookBotHost {
  constructor(private readonly clock: Clock) {
    super();
  }

  async main(): Promise<BotOutput[]> {
    await new Promise<void>((resolve) => this.clock.setTimer(resolve, 5_000));
    return [{ title: 'Polled', message: 'after 5 s' }];
  }
}

const BOTS = [SummarizeBot, StuckBot, PatientBot, VerboseBot];

describe('the testing kit', () => {
  let kit: WebhookTriggerHarness;
  beforeEach(async () => {
    kit = await createWebhookTriggerHarness({
      bots: BOTS,
      providers: [Summarizer],
      options: { maxOutputBytes: 1000, rateLimits: { perTrigger: { limit: 3, ttlMs: 1000 } } },
    });
  });
  afterEach(() => kit.close());

  it('triggers a bot by its id and syncs its outputs; the run is charged its credits', async () => {
    const run = await kit.trigger('summarize', { text: 'one two three four five' });
    expect(run.statusCode).toBe(200);
    expect(run.id).toMatch(/^inv_/);
    const answer = await run.sync();
    expect(answer).toMatchObject({
      statusCode: 200,
      body: {
        success: true,
        outputs: [
          { title: 'Started', message: '23 characters' },
          { title: 'Summary', message: 'one two three' },
        ],
      },
    });
    expect(await kit.credits('acme')).toBe(998);
  });

  it("answers 402 when the bot's account cannot pay, and stores nothing", async () => {
    await kit.setCredits('acme', 1);
    const run = await kit.trigger('summarize', { text: 'hello' });
    expect(run.statusCode).toBe(402);
    expect(run.body).toMatchObject({ success: false, statusCode: 402 });
    expect(run.id).toBeUndefined();
    expect(await kit.credits('acme')).toBe(1);
  });

  it('ends a bot that ignores its signal at its time limit when the clock passes it', async () => {
    const run = await kit.trigger('stuck');
    await kit.clock.tick(59_999);
    expect((await run.status()).body).toMatchObject({ invocation: { status: 'running' } });
    await kit.clock.tick(1);
    expect((await run.sync()).body).toMatchObject({ success: false, status: 'timed_out', error: { code: 'timeout' } });
  });

  it("answers a sync 408 once the clock passes the sync's wait, with the run's status", async () => {
    const run = await kit.trigger('patient');
    const waiting = run.sync(30);
    await kit.clock.tick(30_000);
    expect(await waiting).toMatchObject({ statusCode: 408, body: { status: 'running' } });
    expect((await run.cancel()).statusCode).toBe(200);
  });

  it('cancels a running run: its signal fires, and nothing is refunded', async () => {
    const run = await kit.trigger('patient');
    expect((await run.cancel()).body).toMatchObject({ invocation: { status: 'cancelled' } });
    await kit.idle();
    expect((await run.sync()).body).toMatchObject({ success: false, status: 'cancelled' });
    expect(await kit.credits('acme')).toBe(999);
  });

  it('fails a run whose outputs are over maxOutputBytes', async () => {
    const run = await kit.trigger('verbose', { size: 5000 });
    expect((await run.sync()).body).toMatchObject({ success: false, status: 'failed', error: { code: 'outputs_too_large' } });
  });

  it('refuses the 4th request of a second on one trigger (429), and admits again once the clock moved a second', async () => {
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await kit.trigger('summarize', { text: `n${i}` })).statusCode);
    expect(answers).toEqual([200, 200, 200, 429]);
    await kit.clock.tick(1000);
    expect((await kit.trigger('summarize', { text: 'later' })).statusCode).toBe(200);
  });

  it('answers a repeated Idempotency-Key with the first run, charged once', async () => {
    const first = await kit.trigger('summarize', { text: 'once' }, { idempotencyKey: 'order-1' });
    const again = await kit.trigger('summarize', { text: 'once' }, { idempotencyKey: 'order-1' });
    expect(again.id).toBe(first.id);
    expect(await kit.credits('acme')).toBe(998);
  });

  it('names the bots it has, and the fix, when asked to trigger a bot it was not given', async () => {
    await expect(kit.trigger('summarise')).rejects.toThrow(TESTING_UNKNOWN_BOT('summarise', ['summarize', 'stuck', 'patient', 'verbose']));
  });

  it('refuses a wrong key (401)', async () => {
    const run = await kit.trigger('summarize', { text: 'x' }, { key: 'whk_wrong' });
    expect(run).toMatchObject({ statusCode: 401, body: { success: false } });
  });

  it("reads a run's event stream to its end", async () => {
    const run = await kit.trigger('summarize', { text: 'a b' });
    const events = await run.events();
    expect(events.map((e) => e.event)).toEqual(['status', 'status', 'output', 'output', 'status', 'done']);
    expect(events.at(-1)?.data).toMatchObject({ success: true, outputs: [{ title: 'Started' }, { title: 'Summary', message: 'a b' }] });
  });

  it('captures the callback a run would have delivered, signed and verified', async () => {
    const { secret } = await kit.setCallback('summarize');
    expect(secret).toMatch(/^whsec_/);
    const run = await kit.trigger('summarize', { text: 'call me back' });
    await run.sync();
    await kit.idle();
    await kit.clock.tick(0);
    const callbacks = await kit.callbacks();
    expect(callbacks).toHaveLength(1);
    expect(callbacks[0]).toMatchObject({
      type: 'invocation.completed',
      verified: true,
      answeredWith: 200,
      body: { data: { invocation: { id: run.id, status: 'succeeded' } } },
    });
  });

  it('types the answers and callbacks it reads, so a spec picks fields without a cast', async () => {
    await kit.setCallback('summarize');
    const run = await kit.trigger('summarize', { text: 'typed' });
    const synced = (await run.sync()).body;
    const summary: string | undefined = synced.outputs?.[1]?.message;
    expect(summary).toBe('typed');
    const status: string | undefined = (await run.status()).body.invocation?.status;
    expect(status).toBe('succeeded');
    await kit.idle();
    await kit.clock.tick(0);
    const [callback] = await kit.callbacks();
    const { outputs, error, finishedAt } = callback.body.data.invocation;
    expect([outputs[0].title, error?.message, typeof finishedAt]).toEqual(['Started', undefined, 'string']);
  });

  it("hands over a callback's body exactly as signed, for a receiver of yours to verify", async () => {
    const { secret } = await kit.setCallback('summarize');
    await (await kit.trigger('summarize', { text: 'raw' })).sync();
    await kit.idle();
    await kit.clock.tick(0);
    const [callback] = await kit.callbacks();
    expect(verifyWebhookSignature(secret, callback.headers, callback.rawBody, { now: kit.clock.now() })).toEqual(callback.body);
  });

  it("retries a callback its receiver refused, at the schedule's time on the clock", async () => {
    await kit.setCallback('summarize');
    kit.answerCallbacksWith(503);
    await (await kit.trigger('summarize', { text: 'retry me' })).sync();
    await kit.clock.tick(0);
    expect((await kit.callbacks()).map((c) => c.answeredWith)).toEqual([503]);
    kit.answerCallbacksWith(200);
    await kit.clock.tick(4_000); // the second attempt is 5 s (±20 %) after the first
    await kit.clock.tick(2_100);
    const attempts = await kit.callbacks();
    expect(attempts.map((c) => c.answeredWith)).toEqual([503, 200]);
    expect(attempts.every((c) => c.verified)).toBe(true);
  });

  it('keeps a callback verified as it was when received, however far the clock moves after', async () => {
    await kit.setCallback('summarize');
    await (await kit.trigger('summarize', { text: 'hi' })).sync();
    await kit.clock.tick(0);
    await kit.clock.tick(60 * 60_000); // an hour: past the signature's 5-minute window, counted from now
    expect((await kit.callbacks()).map((c) => c.verified)).toEqual([true]);
  });
});

describe('the testing kit, configured', () => {
  it('refuses a class in bots that is not a bot, naming it and the fix', async () => {
    expect(() => WebhookTriggerTestingModule.forRoot({ bots: [SummarizeBot, Summarizer] })).toThrow(TESTING_NOT_A_BOT('Summarizer'));
    await expect(createWebhookTriggerHarness({ bots: [{ provide: 'a bot', useClass: Summarizer }] })).rejects.toThrow(
      TESTING_NOT_A_BOT('Summarizer'),
    );
  });

  it("keeps Nest's error for a bot whose dependency was not given, and adds the fix: the providers option", async () => {
    const fix = TESTING_MISSING_PROVIDER('SummarizeBot', 'Summarizer', 'createWebhookTriggerHarness()');
    const refused = await createWebhookTriggerHarness({ bots: [SummarizeBot] }).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(refused?.constructor.name).toBe('UnknownDependenciesException'); // Nest's own, not one of ours
    expect(refused?.message).toContain("Nest can't resolve dependencies of the SummarizeBot (?)");
    expect(refused?.message).toContain(fix);
    expect(refused?.stack?.split(fix)).toHaveLength(2); // once, in what a runner prints

    const unbuilt = await runBot(SummarizeBot, { text: 'x' }).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(unbuilt?.message).toContain("Nest can't resolve dependencies of the SummarizeBot (?)");
    expect(unbuilt?.message).toContain(TESTING_MISSING_PROVIDER('SummarizeBot', 'Summarizer', 'runBot()'));
  });

  it('builds bots with the providers your own modules export (imports), in the harness, forRootAsync and runBot', async () => {
    @Module({ providers: [Summarizer], exports: [Summarizer] })
    class SummarizingModule {}

    const kit = await createWebhookTriggerHarness({ bots: [SummarizeBot], imports: [SummarizingModule] });
    try {
      const run = await kit.trigger('summarize', { text: 'one two three four' });
      expect(run.statusCode).toBe(200);
      expect((await run.sync()).body).toEqual({
        success: true,
        outputs: [
          { title: 'Started', message: '18 characters' },
          { title: 'Summary', message: 'one two three' },
        ],
      });
    } finally {
      await kit.close();
    }

    // forRootAsync: the same imports reach the options factory and the bots.
    let factoryGot: unknown;
    const moduleRef = await Test.createTestingModule({
      imports: [
        WebhookTriggerTestingModule.forRootAsync({
          bots: [SummarizeBot],
          imports: [SummarizingModule],
          inject: [Summarizer],
          useFactory: (summarizer: Summarizer) => {
            factoryGot = summarizer;
            return {};
          },
        }),
      ],
    }).compile();
    expect(factoryGot).toBeInstanceOf(Summarizer);
    const app = moduleRef.createNestApplication({ logger: false });
    try {
      await app.init();
      const asyncKit = await WebhookTriggerHarness.of(app);
      const run = await asyncKit.trigger('summarize', { text: 'a b c d e' });
      expect((await run.sync()).body).toMatchObject({
        success: true,
        outputs: [{ title: 'Started' }, { title: 'Summary', message: 'a b c' }],
      });
    } finally {
      await app.close();
    }

    expect(await runBot(SummarizeBot, { text: 'x y z w' }, { imports: [SummarizingModule] })).toMatchObject({
      status: 'succeeded',
      outputs: [{ title: 'Summary', message: 'x y z' }],
    });
  });

  it('says to install @nestjs/testing when a harness is made without it (the rest of the kit imports without it)', async () => {
    jest.doMock('@nestjs/testing', () => {
      throw Object.assign(new Error("Cannot find module '@nestjs/testing'"), { code: 'MODULE_NOT_FOUND' });
    });
    try {
      await expect(createWebhookTriggerHarness({ bots: [SummarizeBot], providers: [Summarizer] })).rejects.toThrow(TESTING_PACKAGE_MISSING);
      // Imported afresh without it, as an app that lacks it does: the import works, and each part that needs it says so.
      let kit: typeof import('../../src/testing/index.js') | undefined;
      jest.isolateModules(() => {
        kit = jest.requireActual<typeof import('../../src/testing/index.js')>('../../src/testing/index.js');
      });
      await expect(kit!.createWebhookTriggerHarness({})).rejects.toThrow(TESTING_PACKAGE_MISSING);
      await expect(kit!.runBot(SummarizeBot, { text: 'x' }, { providers: [Summarizer] })).rejects.toThrow(TESTING_PACKAGE_MISSING);
    } finally {
      jest.dontMock('@nestjs/testing');
    }
  });

  it("closes at once with a run still going: the bot's signal fires, no real grace is waited", async () => {
    const kit = await createWebhookTriggerHarness({ bots: [PatientBot] });
    const run = await kit.trigger('patient');
    expect((await run.status()).body).toMatchObject({ invocation: { status: 'running' } });
    const started = Date.now();
    await kit.close();
    // The module's default grace is 10 s of real time; the kit's is 0. A loose bound, far under it.
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('starts accounts unopened with credits: 0, so the first trigger is 402', async () => {
    const kit = await createWebhookTriggerHarness({ bots: [SummarizeBot], providers: [Summarizer], credits: 0 });
    try {
      expect(await kit.credits('acme')).toBeNull();
      expect((await kit.trigger('summarize', { text: 'x' })).statusCode).toBe(402);
    } finally {
      await kit.close();
    }
  });

  it("takes the module's options from forRootAsync's factory, with what it injects", async () => {
    @Injectable()
    class Limits {
      readonly perTrigger = { limit: 1, ttlMs: 1000 };
    }
    @Module({ providers: [Limits], exports: [Limits] })
    class LimitsModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [
        WebhookTriggerTestingModule.forRootAsync({
          imports: [LimitsModule],
          inject: [Limits],
          useFactory: (limits: Limits) => ({ rateLimits: { perTrigger: limits.perTrigger } }),
          bots: [SummarizeBot],
          providers: [Summarizer],
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const kit = await WebhookTriggerHarness.of(app);
      expect((await kit.trigger('summarize', { text: 'a' })).statusCode).toBe(200);
      // The factory's limit of 1 a second: the second request is refused.
      expect((await kit.trigger('summarize', { text: 'b' })).statusCode).toBe(429);
      expect(await kit.credits('acme')).toBe(998);
    } finally {
      await app.close();
    }
  });

  it("drives an app of yours under its global prefix, and says so when an answer is not the module's", async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [WebhookTriggerTestingModule.forRoot({ bots: [SummarizeBot, PatientBot], providers: [Summarizer] })],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    app.setGlobalPrefix('api');
    // A page of the host's that answers HTML (what a proxy or Express's own 404 would; Nest's 404 body is JSON).
    const page = (_req: unknown, res: { status(code: number): { type(t: string): { send(body: string): void } } }) =>
      res.status(404).type('html').send('<!DOCTYPE html><p>Not here</p>');
    for (const path of ['/nothing-here', '/api/nothing-here']) app.getHttpAdapter().get(path, page);
    await app.init();
    try {
      const kit = await WebhookTriggerHarness.of(app);
      const run = await kit.trigger('summarize', { text: 'alpha beta' });
      expect(run.statusCode).toBe(200);
      expect((await run.sync()).body).toMatchObject({ success: true });
      expect((await run.status()).body).toMatchObject({ invocation: { status: 'succeeded' } });
      expect((await run.events()).map((e) => e.event)).toContain('done');
      const patient = await kit.trigger('patient');
      expect((await patient.cancel()).statusCode).toBe(200);
      await expect(kit.call('GET', '/nothing-here')).rejects.toThrow('GET /nothing-here answered 404 with a body that is not JSON');
    } finally {
      await app.close();
    }
  });

  it('lets Jest exit when a spec of your own app fails before app.close(): the port the harness opened holds nothing open', async () => {
    // A child Jest on this repository's e2e project, running test/fixtures/own-app-fails-before-close.kit-spec.ts only.
    const root = join(__dirname, '../..');
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the repository's own Jest config (CommonJS)
    const { projects } = require(join(root, 'jest.config.js')) as { projects: { displayName: string }[] };
    const { displayName: _name, ...e2e } = projects.find((project) => project.displayName === 'e2e')!;
    const config = { ...e2e, testMatch: ['<rootDir>/test/fixtures/own-app-fails-before-close.kit-spec.ts'] };
    const child = spawn(process.execPath, [join(root, 'node_modules/jest/bin/jest.js'), '--config', JSON.stringify(config), '--ci'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // Left open, the app keeps Jest alive for good ("Jest did not exit"): a loose bound, far over its start on 2 cores.
    const killer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    const exitCode = await new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    clearTimeout(killer);
    expect(output).toContain('Tests:       1 failed, 1 total');
    expect(output).not.toContain('Jest did not exit');
    expect(exitCode).toBe(1);
  }, 60_000);

  it('closes what its app opened when the app fails to start, so nothing of yours is left holding the runner', async () => {
    // A provider of yours that holds a real handle while the app is up, as a connection pool does.
    const pool: { handle?: NodeJS.Timeout } = {};
    @Injectable()
    class Pool {
      onModuleInit() {
        pool.handle = setInterval(() => undefined, 1000);
      }
      onModuleDestroy() {
        clearInterval(pool.handle);
        pool.handle = undefined;
      }
    }
    @Injectable()
    class Seeder {
      onApplicationBootstrap() {
        throw new Error('the seed data is missing');
      }
    }
    try {
      await expect(createWebhookTriggerHarness({ bots: [SummarizeBot], providers: [Summarizer, Pool, Seeder] })).rejects.toThrow(
        'the seed data is missing',
      );
      expect(pool.handle).toBeUndefined();
    } finally {
      clearInterval(pool.handle); // left open, it would keep this Jest alive
    }
  });

  it("lets a bot wait on the module's Clock it injects, so that the spec's clock moves its wait", async () => {
    const kit = await createWebhookTriggerHarness({ bots: [PollerBot] });
    try {
      const run = await kit.trigger('poller');
      await kit.clock.tick(4_999);
      expect((await run.status()).body).toMatchObject({ invocation: { status: 'running' } });
      await kit.clock.tick(1);
      expect((await run.sync()).body).toEqual({ success: true, outputs: [{ title: 'Polled', message: 'after 5 s' }] });
    } finally {
      await kit.close();
    }
  });

  it('keeps idle() waiting while a run waits on the clock, and resolves it once the clock passes the wait', async () => {
    const kit = await createWebhookTriggerHarness({ bots: [PollerBot] });
    try {
      const run = await kit.trigger('poller');
      let idle = false;
      const idled = kit.idle().then(() => (idle = true));
      // tick lets the work it starts settle, and a status request takes more turns: had idle() resolved, it would have.
      await kit.clock.tick(4_999);
      expect((await run.status()).body).toMatchObject({ invocation: { status: 'running' } });
      expect(idle).toBe(false);
      // As docs/testing.md says: move the clock past the wait, then idle() resolves with the outcome stored.
      await kit.clock.tick(1);
      await idled;
      expect((await run.status()).body).toMatchObject({ invocation: { status: 'succeeded' } });
    } finally {
      await kit.close();
    }
  });

  it('runs on the clock it is given', async () => {
    const clock = new TestClock(Date.parse('2030-01-01T00:00:00Z'));
    const kit = await createWebhookTriggerHarness({ bots: [SummarizeBot], providers: [Summarizer], clock });
    try {
      const run = await kit.trigger('summarize', { text: 'x' });
      expect((await run.status()).body).toMatchObject({ invocation: { createdAt: '2030-01-01T00:00:00.000Z' } });
    } finally {
      await kit.close();
    }
  });
});

describe('runBot: main() alone', () => {
  it('returns the outputs and what was emitted, with the providers given', async () => {
    const result = await runBot(SummarizeBot, { text: 'alpha beta gamma delta' }, { providers: [Summarizer] });
    expect(result).toEqual({
      status: 'succeeded',
      outputs: [{ title: 'Summary', message: 'alpha beta gamma' }],
      emitted: [{ title: 'Started', message: '22 characters' }],
      error: null,
    });
  });

  it("takes a fake in place of the bot's dependency", async () => {
    const fake = { provide: Summarizer, useValue: { summarize: () => 'fake summary' } };
    expect((await runBot(SummarizeBot, { text: 'x' }, { providers: [fake] })).outputs).toEqual([
      { title: 'Summary', message: 'fake summary' },
    ]);
  });

  it('gives a bot the Clock it injects: the one given, which the spec moves', async () => {
    const clock = new TestClock();
    const result = runBot(PollerBot, {}, { clock });
    while (clock.pendingTimers === 0) await new Promise((resolve) => setImmediate(resolve)); // main() has set its wait
    await clock.tick(5_000);
    expect(await result).toMatchObject({ status: 'succeeded', outputs: [{ title: 'Polled', message: 'after 5 s' }] });
  });

  it('reports what the bot threw as a failure', async () => {
    expect(await runBot(SummarizeBot, {}, { providers: [Summarizer] })).toMatchObject({
      status: 'failed',
      error: { message: 'inputs.text must be a string' },
    });
  });

  it('hands the bot the signal given, so a spec can see how it stops', async () => {
    const controller = new AbortController();
    const result = runBot(PatientBot, {}, { signal: controller.signal });
    controller.abort(new Error('stop now'));
    expect(await result).toMatchObject({ status: 'failed', error: { message: 'stop now' } });
  });

  it("tells a stop by the spec's signal from the bot failing with the same words", async () => {
    const controller = new AbortController();
    const stopped = runBot(PatientBot, {}, { signal: controller.signal });
    controller.abort(new Error('stop now'));
    const byTheSignal = await stopped;
    expect(byTheSignal).toEqual({ status: 'failed', outputs: [], emitted: [], error: { message: 'stop now', code: 'aborted' } });
    // A bot that throws those words itself failed on its own: no code.
    @WebhookBot({ id: 'quitter' })
    class QuitterBot extends WebhookBotHost {
      main(): Promise<BotOutput[]> {
        return Promise.reject(new Error('stop now'));
      }
    }
    const byTheBot = await runBot(QuitterBot);
    expect(byTheBot).toEqual({ status: 'failed', outputs: [], emitted: [], error: { message: 'stop now' } });
    // The code is typed: a spec can branch on it without a cast.
    const why: 'aborted' | 'invalid_outputs' | undefined = byTheSignal.error?.code;
    expect(why).toBe('aborted');
  });

  it('ends once the signal fires, as a run does, even when main() missed or ignores it', async () => {
    // Aborted before main() is reached (runBot builds the bot first): a listener added then never hears it.
    const early = new AbortController();
    const listening = runBot(ListeningBot, {}, { signal: early.signal });
    early.abort(new Error('stop now'));
    expect(await listening).toEqual({ status: 'failed', outputs: [], emitted: [], error: { message: 'stop now', code: 'aborted' } });

    const later = new AbortController();
    const stuck = runBot(StuckBot, {}, { signal: later.signal });
    setTimeout(() => later.abort(new Error('time is up')), 50);
    expect(await stuck).toMatchObject({ status: 'failed', error: { message: 'time is up' } });
  });
});
