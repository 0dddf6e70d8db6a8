import { Logger } from '@nestjs/common';
import {
  BacklogFullError,
  BotNotRegisteredError,
  IdempotencyKeyReusedError,
  InvocationAlreadyFinishedError,
  NotEnoughCreditsError,
  RateLimitedError,
  ShuttingDownError,
} from '../errors/webhook-trigger.errors.js';
import { RUN_CANCELLED } from '../errors/webhook-trigger.messages.js';
import { WEBHOOK_EVENTS } from '../events/invocation.events.js';
import type { TriggerRecord } from '../persistence/records.js';
import { RunStop } from '../runs/run-stop.reasons.js';
import { InMemoryCreditLedger } from '../persistence/memory/in-memory-credit-ledger.js';
import { createWebhookFakes, deferred, type WebhookFakes } from '../../test/fakes/webhook-fakes.js';
import { InvocationService } from './invocation.service.js';
import { InMemoryWebhookStorage } from '../persistence/memory/in-memory-webhook-storage.js';

describe('InvocationService', () => {
  let f: WebhookFakes;
  let service: InvocationService;
  let trigger: TriggerRecord;

  function serviceOn(fakes: WebhookFakes, storage: InMemoryWebhookStorage = fakes.storage): InvocationService {
    return fakes.serviceOn(storage);
  }

  const balance = () => f.accounts.getBalance('acct');
  const rows = () =>
    f.invocations.listByBot('echo', {
      limit: 100,
      outputsUpTo: Number.MAX_SAFE_INTEGER,
      inputsUpTo: Number.MAX_SAFE_INTEGER,
      errorUpTo: Number.MAX_SAFE_INTEGER,
    });

  beforeAll(() => Logger.overrideLogger(false)); // the executor's notes on dropped outcomes
  beforeEach(async () => {
    f = createWebhookFakes({ idempotencyTtlMs: 60_000 });
    f.addBot({ id: 'echo', credits: 2, accountId: 'acct' });
    ({ trigger } = await f.addTrigger('echo'));
    await f.accounts.setBalance('acct', 5);
    service = serviceOn(f);
  });

  describe('start', () => {
    it('stores the run queued, charges its credits, dispatches it and emits queued', async () => {
      const started = await service.start(trigger, { city: 'Oslo' });
      expect(started).toEqual({ id: expect.stringMatching(/^inv_[A-Za-z0-9_-]{22}$/), replayed: false, credits: 2 });
      expect(await f.invocations.findById(started.id)).toMatchObject({
        triggerId: trigger.id,
        botId: 'echo',
        accountId: 'acct',
        status: 'queued',
        inputs: { city: 'Oslo' },
        credits: 2,
      });
      expect(await balance()).toBe(3);
      expect(f.runner.dispatched).toEqual([started.id]);
      expect(f.events).toEqual([
        {
          name: WEBHOOK_EVENTS.queued,
          event: { invocationId: started.id, triggerId: trigger.id, botId: 'echo', accountId: 'acct', status: 'queued' },
        },
      ]);
    });

    it('tells the accept step whether runs were waiting to start here (the node is behind on its runs)', async () => {
      const accept = jest.spyOn(f.storage, 'accept');
      await service.start(trigger, {});
      await service.start(trigger, {}); // the first one is still waiting in the runner

      expect(accept.mock.calls.map(([run]) => run.runsWaiting)).toEqual([false, true]);
    });

    it('refuses a run the account cannot pay for (402) and leaves no row, no debit, no dispatch', async () => {
      await f.accounts.setBalance('acct', 1);
      const error = await service.start(trigger, {}).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotEnoughCreditsError);
      expect((error as Error).message).toBe("The bot's account has fewer than 2 credit(s) left; nothing was run");
      expect((error as NotEnoughCreditsError).funded).toBe(true);
      expect(await rows()).toEqual([]);
      expect(await balance()).toBe(1);
      expect(f.runner.dispatched).toEqual([]);
      expect(f.events).toEqual([]);
    });

    it('refuses a run of an account that does not exist', async () => {
      const { trigger: orphan } = await f.addTrigger('echo', { accountId: 'nobody' });
      await expect(service.start(orphan, {})).rejects.toBeInstanceOf(NotEnoughCreditsError);
      expect(await rows()).toEqual([]);
      expect(await f.accounts.getBalance('nobody')).toBeNull();
    });

    it('starts a free bot without touching any balance', async () => {
      f.addBot({ id: 'free', credits: 0, accountId: 'unfunded' });
      const { trigger: free } = await f.addTrigger('free');
      const started = await service.start(free, {});
      expect((await f.invocations.findById(started.id))?.status).toBe('queued');
      expect(await f.accounts.getBalance('unfunded')).toBeNull();
    });

    it('answers a repeat with the same idempotency key and body with the same run, charged and dispatched once', async () => {
      const first = await service.start(trigger, { a: 1 }, { idempotencyKey: 'order-1', requestHash: 'h1' });
      const again = await service.start(trigger, { a: 1 }, { idempotencyKey: 'order-1', requestHash: 'h1' });
      expect(again).toEqual({ id: first.id, replayed: true, credits: 0 });
      expect((await rows()).map((r) => r.id)).toEqual([first.id]);
      expect(await balance()).toBe(3);
      expect(f.runner.dispatched).toEqual([first.id]);
      expect(f.events.map((e) => e.name)).toEqual([WEBHOOK_EVENTS.queued]);
    });

    it('starts one run for concurrent requests with one idempotency key', async () => {
      const results = await Promise.all(
        Array.from({ length: 4 }, () => service.start(trigger, {}, { idempotencyKey: 'burst', requestHash: 'h' })),
      );
      expect(new Set(results.map((r) => r.id)).size).toBe(1);
      expect(results.filter((r) => !r.replayed)).toHaveLength(1);
      expect(await rows()).toHaveLength(1);
      expect(await balance()).toBe(3);
    });

    it('refuses the same idempotency key with a different body (IdempotencyKeyReusedError) and charges nothing more', async () => {
      await service.start(trigger, { a: 1 }, { idempotencyKey: 'order-1', requestHash: 'h1' });
      await expect(service.start(trigger, { a: 2 }, { idempotencyKey: 'order-1', requestHash: 'h2' })).rejects.toBeInstanceOf(
        IdempotencyKeyReusedError,
      );
      expect(await rows()).toHaveLength(1);
      expect(await balance()).toBe(3);
    });

    it('keeps idempotency keys per trigger', async () => {
      const { trigger: other } = await f.addTrigger('echo');
      const a = await service.start(trigger, {}, { idempotencyKey: 'k', requestHash: 'h' });
      const b = await service.start(other, {}, { idempotencyKey: 'k', requestHash: 'h' });
      expect(b.id).not.toBe(a.id);
      expect(b.replayed).toBe(false);
      expect(await balance()).toBe(1);
    });

    it('starts a new run for a key older than idempotencyTtlMs, and frees the old run of it', async () => {
      const old = {
        id: 'inv_OLDOLDOLDOLDOLDOLDOLDO',
        triggerId: trigger.id,
        botId: 'echo',
        accountId: 'acct',
        inputs: {},
        credits: 2,
        idempotencyKey: 'k',
        requestHash: 'h',
        createdAt: new Date(Date.now() - 61_000),
      };
      await f.invocations.insert(old);
      const started = await service.start(trigger, {}, { idempotencyKey: 'k', requestHash: 'other body' });
      expect(started.replayed).toBe(false);
      expect(started.id).not.toBe(old.id);
      expect((await f.invocations.findById(old.id))?.idempotencyKey).toBeNull();
      expect((await f.invocations.findById(started.id))?.idempotencyKey).toBe('k');
    });

    it('refuses a trigger whose bot is not registered here, storing nothing', async () => {
      const { trigger: stray } = await f.addTrigger('gone', { accountId: 'acct' });
      const error = await service.start(stray, {}).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BotNotRegisteredError);
      expect((error as Error).message).toBe('Bot "gone" is not registered in this application');
      expect(await f.invocations.listQueued(10)).toEqual([]);
      expect(await balance()).toBe(5);
    });

    it('refuses new runs once shutdown began (503), storing and charging nothing', async () => {
      f.shutdown.begin();
      await expect(service.start(trigger, {})).rejects.toBeInstanceOf(ShuttingDownError);
      expect(await rows()).toEqual([]);
      expect(await balance()).toBe(5);
      expect(f.runner.dispatched).toEqual([]);
    });

    it('refuses runs over maxQueuedRuns waiting to start (503), storing, charging and dispatching nothing, until one starts', async () => {
      const fakes = createWebhookFakes({ maxQueuedRuns: 2 });
      fakes.addBot({ id: 'echo', credits: 1, accountId: 'acct' });
      const { trigger: echo } = await fakes.addTrigger('echo');
      await fakes.accounts.setBalance('acct', 10);
      const bounded = serviceOn(fakes);
      const first = await bounded.start(echo, { n: 1 }, { idempotencyKey: 'k1', requestHash: 'h1' });
      await bounded.start(echo, { n: 2 });
      const error = await bounded.start(echo, { n: 3 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BacklogFullError);
      expect((error as Error).message).toBe(
        'Too many runs are waiting to start (maxQueuedRuns: 2); nothing was stored or charged, retry later',
      );
      // Refused before the idempotency look-up, as documented: a repeat of an accepted run too.
      await expect(bounded.start(echo, { n: 1 }, { idempotencyKey: 'k1', requestHash: 'h1' })).rejects.toBeInstanceOf(BacklogFullError);
      expect(await fakes.invocations.listQueued(10)).toHaveLength(2);
      expect(await fakes.accounts.getBalance('acct')).toBe(8);
      expect(fakes.runner.dispatched).toHaveLength(2);
      expect(fakes.events.filter((e) => e.name === WEBHOOK_EVENTS.queued)).toHaveLength(2);

      await fakes.runner.runPending();
      expect(await bounded.start(echo, { n: 1 }, { idempotencyKey: 'k1', requestHash: 'h1' })).toEqual({
        id: first.id,
        replayed: true,
        credits: 0,
      });
      expect((await bounded.start(echo, { n: 4 })).replayed).toBe(false);
      expect(await fakes.accounts.getBalance('acct')).toBe(7);
    });

    it('counts the runs waiting to be dispatched again (their runner threw) against maxQueuedRuns', async () => {
      const fakes = createWebhookFakes({ maxQueuedRuns: 2 });
      fakes.addBot({ id: 'echo', credits: 1, accountId: 'acct' });
      const { trigger: echo } = await fakes.addTrigger('echo');
      await fakes.accounts.setBalance('acct', 10);
      const bounded = serviceOn(fakes);
      // The runner's service is down: each run is accepted (and charged), then waits for its next dispatch.
      jest.spyOn(fakes.runner, 'dispatch').mockRejectedValue(new Error('the queue is unreachable'));
      await bounded.start(echo, { n: 1 });
      await bounded.start(echo, { n: 2 });
      expect(fakes.retries.pending).toBe(2);
      await expect(bounded.start(echo, { n: 3 })).rejects.toBeInstanceOf(BacklogFullError);
      expect(await fakes.accounts.getBalance('acct')).toBe(8);
      fakes.retries.onApplicationShutdown();
    });

    it("counts an account's runs waiting to be dispatched again in its share of maxQueuedRuns (429 past it), as in the whole", async () => {
      const fakes = createWebhookFakes({ maxQueuedRuns: 4 });
      fakes.addBot({ id: 'echo', credits: 1, accountId: 'acct' });
      fakes.addBot({ id: 'other', credits: 1, accountId: 'other' });
      const { trigger: echo } = await fakes.addTrigger('echo');
      const { trigger: other } = await fakes.addTrigger('other');
      await fakes.accounts.setBalance('acct', 10);
      await fakes.accounts.setBalance('other', 10);
      const bounded = serviceOn(fakes);
      // The runner's service is down: every run accepted waits for its next dispatch, none in the runner.
      jest.spyOn(fakes.runner, 'dispatch').mockRejectedValue(new Error('the queue is unreachable'));
      await bounded.start(echo, { n: 1 });
      await bounded.start(echo, { n: 2 });
      expect(fakes.backlog.count()).toBe(2);
      expect(fakes.backlog.countOf('acct')).toBe(2);
      // acct holds its share (2 of 4): refused 429, nothing charged; the other account's runs still go.
      await expect(bounded.start(echo, { n: 3 })).rejects.toBeInstanceOf(RateLimitedError);
      expect(await fakes.accounts.getBalance('acct')).toBe(8);
      await bounded.start(other, { n: 1 });
      expect(fakes.backlog.countOf('other')).toBe(1);
      expect(await fakes.accounts.getBalance('other')).toBe(9);
      fakes.retries.onApplicationShutdown();
    });

    it('sets no bound with maxQueuedRuns 0', async () => {
      const fakes = createWebhookFakes({ maxQueuedRuns: 0 });
      fakes.addBot({ id: 'echo', credits: 0, accountId: 'acct' });
      const { trigger: echo } = await fakes.addTrigger('echo');
      const unbounded = serviceOn(fakes);
      for (let i = 0; i < 20; i++) await unbounded.start(echo, { i });
      expect(fakes.runner.backlog()).toBe(20);
    });
  });

  describe('find', () => {
    it("finds a run through its own trigger, never through another trigger's", async () => {
      const { id } = await service.start(trigger, { a: 1 });
      const { trigger: other } = await f.addTrigger('echo');
      expect(await service.find(trigger, id)).toMatchObject({ id, status: 'queued', inputs: { a: 1 } });
      expect(await service.find(other, id)).toBeNull();
      expect(await service.find(trigger, 'inv_AAAAAAAAAAAAAAAAAAAAAA')).toBeNull();
    });
  });

  describe('cancel', () => {
    it('cancels a queued run and refunds it; waiters wake and cancelled is emitted', async () => {
      const { id } = await service.start(trigger, {});
      const woken = deferred<string>();
      f.bus.subscribe(id, () => void f.invocations.findById(id).then((r) => woken.resolve(r!.status)));
      const cancelled = await service.cancel(trigger, id);
      expect(cancelled).toMatchObject({ id, status: 'cancelled', error: { message: RUN_CANCELLED, code: 'cancelled' }, startedAt: null });
      expect(cancelled?.finishedAt).toBeInstanceOf(Date);
      expect(await balance()).toBe(5);
      expect(await woken.promise).toBe('cancelled');
      expect(f.events.map((e) => [e.name, e.event.durationMs])).toEqual([
        [WEBHOOK_EVENTS.queued, undefined],
        [WEBHOOK_EVENTS.cancelled, undefined],
      ]);
      // The run never starts, although it was dispatched.
      await f.runner.runPending();
      expect((await f.invocations.findById(id))?.status).toBe('cancelled');
    });

    it('cancels a queued run and refunds it in one unit: a failed refund leaves it queued', async () => {
      class BrokenRefunds extends InMemoryCreditLedger {
        override refund(): Promise<void> {
          return Promise.reject(new Error('billing is down'));
        }
      }
      class BrokenRefundsStorage extends InMemoryWebhookStorage {
        override readonly ledger = new BrokenRefunds(this.database);
      }
      const broken = serviceOn(f, new BrokenRefundsStorage(f.database));
      const { id } = await broken.start(trigger, {});
      await expect(broken.cancel(trigger, id)).rejects.toThrow('billing is down');
      expect(await f.invocations.findById(id)).toMatchObject({ status: 'queued', finishedAt: null, error: null });
      expect(await balance()).toBe(3);
    });

    it('cancels a running run without a refund and fires its signal; the bot cannot overwrite it', async () => {
      const seen = deferred<unknown>();
      const started = deferred();
      f.addBot({
        id: 'slow',
        credits: 2,
        accountId: 'acct',
        main: async (_inputs, ctx) => {
          started.resolve();
          ctx.signal.addEventListener('abort', () => seen.resolve(ctx.signal.reason));
          await new Promise((resolve) => setTimeout(resolve, 50));
          return [{ title: 'late', message: 'after cancel' }];
        },
      });
      const { trigger: slow } = await f.addTrigger('slow');
      const { id } = await service.start(slow, {});
      const running = f.runner.runPending();
      await started.promise;
      const cancelled = await service.cancel(slow, id);
      expect(cancelled).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
      const reason = await seen.promise;
      expect(reason).toBeInstanceOf(RunStop);
      expect((reason as RunStop).status).toBe('cancelled');
      await running;
      expect(await f.invocations.findById(id)).toMatchObject({ status: 'cancelled', outputs: null });
      expect(await balance()).toBe(3);
      const cancelledEvent = f.events.find((e) => e.name === WEBHOOK_EVENTS.cancelled);
      expect(cancelledEvent?.event.durationMs).toEqual(expect.any(Number));
      expect(f.events.map((e) => e.name)).not.toContain(WEBHOOK_EVENTS.succeeded);
    });

    it('refuses to cancel a finished run (InvocationAlreadyFinishedError) and changes nothing', async () => {
      const { id } = await service.start(trigger, {});
      await f.runner.runPending();
      const error = await service.cancel(trigger, id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvocationAlreadyFinishedError);
      expect((error as Error).message).toBe(`Invocation "${id}" already finished (succeeded); it cannot be cancelled`);
      expect((await f.invocations.findById(id))?.status).toBe('succeeded');
      expect(await balance()).toBe(3);
    });

    it("answers null for an unknown run or another trigger's run", async () => {
      const { id } = await service.start(trigger, {});
      const { trigger: other } = await f.addTrigger('echo');
      expect(await service.cancel(other, id)).toBeNull();
      expect(await service.cancel(trigger, 'inv_AAAAAAAAAAAAAAAAAAAAAA')).toBeNull();
      expect((await f.invocations.findById(id))?.status).toBe('queued');
    });
  });
});
