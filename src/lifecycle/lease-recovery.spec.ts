import { Logger } from '@nestjs/common';
import { RUN_INTERRUPTED } from '../errors/webhook-trigger.messages.js';
import { WEBHOOK_EVENTS } from '../events/invocation.events.js';
import type { WebhookTriggerModuleOptions } from '../options/webhook-trigger-options.interface.js';
import type { ChosenExtras } from '../options/resolve-options.js';
import type { NewInvocation } from '../persistence/records.js';
import type { BotRunner } from '../runs/bot-runner.js';
import { RecordingBotRunner } from '../../test/fakes/recording-bot.runner.js';
import { createWebhookFakes, type WebhookFakes } from '../../test/fakes/webhook-fakes.js';
import { InterruptedRuns } from './interrupted-runs.js';
import { LeaseRecovery } from './lease-recovery.js';
import { ManualClock } from '../time/manual-clock.js';
import { until } from '../../test/helpers/http.js';

/** A runner whose queue outlives the process and finds queued rows itself (as BullMqBotRunner does). */
class DurableRecordingRunner extends RecordingBotRunner {
  static override readonly durable = true;
}

describe('LeaseRecovery', () => {
  let f: WebhookFakes;
  let recovery: LeaseRecovery;

  function setUp(options: WebhookTriggerModuleOptions = {}, runner?: BotRunner, extras: ChosenExtras = {}): void {
    f = createWebhookFakes(options, extras);
    const interrupted = new InterruptedRuns(f.invocations, f.registry, f.finisher, f.options, f.clock);
    recovery = new LeaseRecovery(f.invocations, runner ?? f.runner, f.executor, interrupted, f.shutdown, f.options, f.clock, f.retries);
    f.addBot({ id: 'once' });
    f.addBot({ id: 'again', retryInterrupted: true });
  }

  let n = 0;
  async function insert(botId: string, createdAt = new Date()): Promise<string> {
    const invocation: NewInvocation = {
      id: `inv_${String(++n).padStart(22, '0')}`,
      triggerId: 'trg_AAAAAAAAAAAAAAAA',
      botId,
      accountId: 'acct',
      inputs: {},
      credits: 1,
      idempotencyKey: null,
      requestHash: null,
      createdAt,
    };
    await f.invocations.insert(invocation);
    return invocation.id;
  }

  /** A run claimed by a process, with its lease ending `leaseMs` from now (negative: already over). */
  async function runningOn(owner: string, botId: string, leaseMs: number): Promise<string> {
    const id = await insert(botId);
    await f.invocations.markRunning(id, new Date(Date.now() - 60_000), owner, new Date(Date.now() + leaseMs));
    return id;
  }

  beforeAll(() => Logger.overrideLogger(false));
  beforeEach(() => setUp());
  afterEach(() => f.shutdown.begin()); // stops the recovery timer

  describe('recoverExpired', () => {
    it("stores failed (interrupted) a default bot's run whose lease ran out, wakes waiters and emits failed", async () => {
      const id = await runningOn('crashed', 'once', -1000);
      const woken: string[] = [];
      f.bus.subscribe(id, () => woken.push(id));
      expect(await recovery.recoverExpired()).toBe(1);
      expect(await f.invocations.findById(id)).toMatchObject({
        status: 'failed',
        outputs: null, // left as they were: nothing was emitted
        error: { message: RUN_INTERRUPTED, code: 'interrupted' },
      });
      expect(woken).toEqual([id]);
      expect(f.events).toEqual([
        {
          name: WEBHOOK_EVENTS.failed,
          event: expect.objectContaining({ invocationId: id, status: 'failed', durationMs: expect.any(Number) }),
        },
      ]);
      expect(f.runner.dispatched).toEqual([]);
    });

    it("queues a retryInterrupted bot's run again and dispatches it, and it then runs here", async () => {
      const id = await runningOn('crashed', 'again', -1000);
      expect(await recovery.recoverExpired()).toBe(1);
      expect(await f.invocations.findById(id)).toMatchObject({ status: 'queued', startedAt: null, owner: null });
      expect(f.runner.dispatched).toEqual([id]);
      await f.runner.runPending();
      expect(await f.invocations.findById(id)).toMatchObject({ status: 'succeeded', owner: f.executor.owner });
    });

    it('leaves a run with a fresh lease alone', async () => {
      const id = await runningOn('alive', 'once', 60_000);
      expect(await recovery.recoverExpired()).toBe(0);
      expect(await f.invocations.findById(id)).toMatchObject({ status: 'running', owner: 'alive', finishedAt: null });
      expect(f.events).toEqual([]);
    });
  });

  describe('at startup', () => {
    it('dispatches runs left queued by an earlier process, oldest first, and recovers expired leases', async () => {
      const later = await insert('once', new Date(Date.now() - 1000));
      const earlier = await insert('once', new Date(Date.now() - 2000));
      const lost = await runningOn('crashed', 'once', -1000);
      await recovery.onApplicationBootstrap();
      expect(f.runner.dispatched).toEqual([earlier, later]);
      expect((await f.invocations.findById(lost))?.status).toBe('failed');
    });

    it('leaves queued runs to a durable runner, which finds them itself', async () => {
      const runner = new DurableRecordingRunner();
      setUp({}, runner);
      await insert('once');
      const lost = await runningOn('crashed', 'once', -1000);
      await recovery.onApplicationBootstrap();
      expect(runner.dispatched).toEqual([]);
      expect((await f.invocations.findById(lost))?.status).toBe('failed');
    });

    it("does nothing in an 'api' process: it runs no bots", async () => {
      const runner = new DurableRecordingRunner();
      setUp({ role: 'api' }, runner, { runner: DurableRecordingRunner });
      await insert('once');
      const lost = await runningOn('crashed', 'once', -1000);
      await recovery.onApplicationBootstrap();
      expect(runner.dispatched).toEqual([]);
      expect((await f.invocations.findById(lost))?.status).toBe('running');
    });

    it('then recovers periodically, every third of runLeaseMs', async () => {
      const clock = new ManualClock(Date.now());
      setUp({ runLeaseMs: 150 }, undefined, { clock });
      await recovery.onApplicationBootstrap();
      const id = await runningOn('crashed', 'once', -1000);
      const status = async () => (await f.invocations.findById(id))?.status;
      await clock.tick(49);
      expect(await status()).toBe('running'); // the next pass is due at 50 ms
      await clock.tick(1);
      await until(async () => (await status()) === 'failed', 2_000, 'the pass at 50 ms to recover the run');
    });
  });
});
