/**
 * Events (webhook-trigger.invocation.*: queued, started, then how the run ended, with its duration) and the
 * history of runs: every final state stored with its start and finish times.
 */
import type { InvocationView } from '../../src/index.js';
import { WEBHOOK_EVENTS } from '../../src/index.js';
import { rowOf, storedInvocations, untilStored } from '../helpers/db.js';
import { eventsOf, historyEntry, type CapturedEvent } from '../helpers/events.js';
import { CANCELLED_ERROR, TIMEOUT_ERROR, cancelRun, sleep, startRun, syncInvocation, until } from '../helpers/http.js';
import {
  createTrigger,
  describeOnEveryAdapter,
  describeOnEveryAdapterAndDatabase,
  type TestTrigger,
  type WebhookTestApp,
  LIFECYCLE_APP,
  ROOMY_APP,
  describeApp,
} from '../helpers/webhook-app.js';

const ACCOUNT = 'acct';

describeOnEveryAdapterAndDatabase('events and history', ({ makeAdapter, database }) => {
  describe('with a roomy configuration', () => {
    const shared = describeApp({ makeAdapter, database }, ROOMY_APP, { account: ACCOUNT });
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    let echo: TestTrigger;
    beforeAll(async () => {
      ({ app: t, events } = shared);
      echo = await createTrigger(t, 'echo');
    });

    it('emits queued, started, succeeded in order with the invocation, trigger, bot and account', async () => {
      const id = await startRun(echo, { a: 1 });
      await syncInvocation(echo, id);
      await until(() => events.filter((e) => e.payload.invocationId === id).length === 3, 1000, 'three events');
      const mine = events.filter((e) => e.payload.invocationId === id);
      const base = { invocationId: id, triggerId: echo.id, botId: 'echo', accountId: ACCOUNT };
      expect(mine).toEqual([
        { name: WEBHOOK_EVENTS.queued, payload: { ...base, status: 'queued' } },
        { name: WEBHOOK_EVENTS.started, payload: { ...base, status: 'running' } },
        { name: WEBHOOK_EVENTS.succeeded, payload: { ...base, status: 'succeeded', durationMs: expect.any(Number) } },
      ]);
      expect(mine[2].payload.durationMs).toBeGreaterThanOrEqual(0);
    });

    it('emits failed for a failing run, with how long it ran', async () => {
      const fail = await createTrigger(t, 'fail', 'events');
      const slowFail = await startRun(fail, { message: 'nope' });
      await syncInvocation(fail, slowFail);
      await until(() => events.some((e) => e.payload.invocationId === slowFail && e.name === WEBHOOK_EVENTS.failed), 1000, 'failed');
      expect(events.filter((e) => e.payload.invocationId === slowFail).map((e) => e.name)).toEqual([
        WEBHOOK_EVENTS.queued,
        WEBHOOK_EVENTS.started,
        WEBHOOK_EVENTS.failed,
      ]);
      const failed = events.find((e) => e.payload.invocationId === slowFail && e.name === WEBHOOK_EVENTS.failed)!;
      expect(failed.payload).toEqual({
        invocationId: slowFail,
        triggerId: fail.id,
        botId: 'fail',
        accountId: ACCOUNT,
        status: 'failed',
        durationMs: expect.any(Number),
      });
    });

    it('stores finished runs as succeeded or failed with their start and finish times', async () => {
      const slow = await createTrigger(t, 'slow', 'timed');
      const fail = await createTrigger(t, 'fail', 'timed');
      const okId = await startRun(slow, { ms: 50 });
      const failId = await startRun(fail, { message: 'kaput' });
      await syncInvocation(slow, okId);
      await syncInvocation(fail, failId);

      const ok = (await historyEntry(t, 'slow', okId))!;
      expect(ok).toMatchObject({
        status: 'succeeded',
        triggerId: slow.id,
        credits: 1,
        outputs: [{ title: 'slept', message: '50' }],
        error: null,
      });
      expect(ok.startedAt).toBeInstanceOf(Date);
      expect(ok.finishedAt).toBeInstanceOf(Date);
      expect(ok.startedAt!.getTime()).toBeGreaterThanOrEqual(ok.createdAt.getTime());
      expect(ok.finishedAt!.getTime() - ok.startedAt!.getTime()).toBeGreaterThanOrEqual(45);

      const failed = (await historyEntry(t, 'fail', failId))!;
      expect(failed).toMatchObject({ status: 'failed', error: { message: 'kaput' } });
      expect(failed.finishedAt!.getTime()).toBeGreaterThanOrEqual(failed.startedAt!.getTime());

      // And in the file itself.
      const [row] = await storedInvocations(t.store, fail.id);
      expect(row).toMatchObject({ id: failId, status: 'failed' });
      expect(row.started_at).not.toBeNull();
      expect(row.finished_at).not.toBeNull();
    });
  });
});

describeOnEveryAdapter('events and history', ({ makeAdapter }) => {
  describe('with the lifecycle app (64 run slots, a 1 s idempotency TTL)', () => {
    const shared = describeApp({ makeAdapter }, LIFECYCLE_APP, { account: ACCOUNT });
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    beforeAll(() => ({ app: t, events } = shared));

    it('stores succeeded, failed, cancelled and timed_out runs with their start and finish times', async () => {
      const echo = await createTrigger(t, 'echo', 'states');
      const fail = await createTrigger(t, 'fail', 'states');
      const limited = await createTrigger(t, 'limited', 'states');
      const abortable = await createTrigger(t, 'abortable', 'states');
      const ok = await startRun(echo, { a: 'b' });
      const failed = await startRun(fail, { message: 'kaput' });
      const timedOut = await startRun(limited, { ms: 2000 });
      const cancelled = await startRun(abortable, { ms: 3000 });
      await untilStored(t, abortable, cancelled, 'running');
      expect((await cancelRun(abortable, cancelled)).status).toBe(200);
      await Promise.all([syncInvocation(echo, ok), syncInvocation(fail, failed), syncInvocation(limited, timedOut)]);

      const expected: Array<[TestTrigger, string, Partial<InvocationView>]> = [
        [echo, ok, { status: 'succeeded', outputs: [{ title: 'a', message: 'b' }], error: null }],
        [fail, failed, { status: 'failed', outputs: [], error: { message: 'kaput' } }],
        [limited, timedOut, { status: 'timed_out', outputs: [], error: TIMEOUT_ERROR(200) }],
        [abortable, cancelled, { status: 'cancelled', error: CANCELLED_ERROR }],
      ];
      for (const [trigger, id, fields] of expected) {
        const entry = (await historyEntry(t, trigger.botId, id))!;
        expect(entry).toMatchObject({ id, triggerId: trigger.id, botId: trigger.botId, credits: 1, ...fields });
        expect(entry.startedAt).toBeInstanceOf(Date);
        expect(entry.finishedAt).toBeInstanceOf(Date);
        expect(entry.startedAt!.getTime()).toBeGreaterThanOrEqual(entry.createdAt.getTime());
        expect(entry.finishedAt!.getTime()).toBeGreaterThanOrEqual(entry.startedAt!.getTime());
        // And in the file itself.
        const row = rowOf(t, trigger, id)!;
        expect(row.status).toBe(fields.status);
        expect(row.started_at).toBe(entry.startedAt!.getTime());
        expect(row.finished_at).toBe(entry.finishedAt!.getTime());
      }
      const limitedEntry = (await historyEntry(t, 'limited', timedOut))!;
      expect(limitedEntry.finishedAt!.getTime() - limitedEntry.startedAt!.getTime()).toBeGreaterThanOrEqual(195);
    });

    it('emits failed, cancelled (running) and timed_out with the payload and how long the run took', async () => {
      const fail = await createTrigger(t, 'fail', 'events');
      const slow = await createTrigger(t, 'abortable', 'events');
      const limited = await createTrigger(t, 'limited', 'events');
      const failed = await startRun(fail, { message: 'x' });
      const cancelled = await startRun(slow, { ms: 3000 });
      const timedOut = await startRun(limited, { ms: 2000 });
      await untilStored(t, slow, cancelled, 'running');
      await sleep(50);
      await cancelRun(slow, cancelled);
      await Promise.all([syncInvocation(fail, failed), syncInvocation(limited, timedOut)]);

      const expectLife = (trigger: TestTrigger, id: string, end: keyof typeof WEBHOOK_EVENTS, status: string) => {
        const base = { invocationId: id, triggerId: trigger.id, botId: trigger.botId, accountId: ACCOUNT };
        const mine = eventsOf(events, id);
        expect(mine).toEqual([
          { name: WEBHOOK_EVENTS.queued, payload: { ...base, status: 'queued' } },
          { name: WEBHOOK_EVENTS.started, payload: { ...base, status: 'running' } },
          { name: WEBHOOK_EVENTS[end], payload: { ...base, status, durationMs: expect.any(Number) } },
        ]);
        return mine[2].payload.durationMs!;
      };
      await until(() => eventsOf(events, timedOut).length === 3, 1000, 'the timed_out event');
      expect(expectLife(fail, failed, 'failed', 'failed')).toBeGreaterThanOrEqual(0);
      const cancelledAfter = expectLife(slow, cancelled, 'cancelled', 'cancelled');
      expect(cancelledAfter).toBeGreaterThanOrEqual(40);
      expect(cancelledAfter).toBeLessThan(2000);
      const timedOutAfter = expectLife(limited, timedOut, 'timed_out', 'timed_out');
      expect(timedOutAfter).toBeGreaterThanOrEqual(195);
      expect(timedOutAfter).toBeLessThan(1000);
    });
  });
});
