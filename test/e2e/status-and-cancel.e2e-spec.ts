/**
 * GET …/invocation/:invocationId (the run's state at once) and POST …/cancel (stops a queued or running run,
 * once; refunds a run that never started); how a failed, cancelled or timed-out run is answered.
 */
import { ClusterBus, WEBHOOK_EVENTS } from '../../src/index.js';
import { InMemoryClusterBus } from '../../src/cluster/in-memory-cluster.bus.js';
import { InvocationAlreadyFinishedError } from '../../src/errors/webhook-trigger.errors.js';
import { INVALID_KEY, MISSING_KEY } from '../../src/errors/webhook-trigger.messages.js';
import { InvocationService } from '../../src/invocations/invocation.service.js';
import { InvocationExecutor } from '../../src/runs/invocation.executor.js';
import { TriggerRepository } from '../../src/persistence/trigger.repository.js';
import { botLog } from '../fixtures/lifecycle-bots.js';
import { creditsRow, rowOf, untilStored } from '../helpers/db.js';
import { captureEvents, eventsOf, historyEntry, type CapturedEvent } from '../helpers/events.js';
import {
  CANCELLED_ERROR,
  ISO,
  TIMEOUT_ERROR,
  cancelRun,
  expectError,
  expectNoStack,
  getStatus,
  request,
  startRun,
  syncInvocation,
  syncUntilFinished,
  until,
} from '../helpers/http.js';
import {
  createTrigger,
  describeOnEveryAdapter,
  startWebhookApp,
  type TestTrigger,
  type WebhookTestApp,
  LIFECYCLE_APP,
  ONE_RUN_SLOT_APP,
  describeApp,
} from '../helpers/webhook-app.js';

const ACCOUNT = 'acct';

describeOnEveryAdapter('status and cancel', ({ makeAdapter }) => {
  describe('with the lifecycle app (64 run slots, a 1 s idempotency TTL)', () => {
    const shared = describeApp({ makeAdapter }, LIFECYCLE_APP, { account: ACCOUNT });
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    beforeAll(() => ({ app: t, events } = shared));

    describe('GET /webhooks/:triggerId/trigger/invocation/:invocationId', () => {
      it('answers at once with the state while queued or running, and the outputs once succeeded', async () => {
        const slow = await createTrigger(t, 'abortable', 'status');
        const id = await startRun(slow, { ms: 600 });
        const first = await getStatus(slow, id);
        expect(first.status).toBe(200);
        expect(first.headers.get('content-type')).toMatch(/^application\/json/);
        const early = first.body.invocation.status;
        expect(['queued', 'running']).toContain(early);
        expect(first.body).toEqual({
          success: true,
          invocation: { id, status: early, createdAt: ISO, startedAt: early === 'queued' ? null : ISO, finishedAt: null },
        });
        const createdAt = first.body.invocation.createdAt;

        await untilStored(t, slow, id, 'running');
        const running = await getStatus(slow, id);
        expect(running.elapsedMs).toBeLessThan(300); // it does not wait for the run
        expect(running.body).toEqual({ success: true, invocation: { id, status: 'running', createdAt, startedAt: ISO, finishedAt: null } });
        const startedAt = running.body.invocation.startedAt;
        expect(Date.parse(startedAt)).toBeGreaterThanOrEqual(Date.parse(createdAt));

        expect((await syncInvocation(slow, id)).body).toEqual({ success: true, outputs: [{ title: 'slept', message: '600' }] });
        const done = await getStatus(slow, id);
        expect(done.status).toBe(200);
        expect(done.body).toEqual({
          success: true,
          invocation: { id, status: 'succeeded', createdAt, startedAt, finishedAt: ISO },
          outputs: [{ title: 'slept', message: '600' }],
        });
        expect(Date.parse(done.body.invocation.finishedAt) - Date.parse(startedAt)).toBeGreaterThanOrEqual(590);
      });

      it('applies the sync rules: 401 for a missing or wrong key, 404 for unknown, malformed or another trigger’s invocations', async () => {
        const a = await createTrigger(t, 'echo', 'status A');
        const b = await createTrigger(t, 'echo', 'status B');
        const idA = await startRun(a, { mine: 'a' });
        const idB = await startRun(b, { mine: 'b' });
        await syncInvocation(a, idA);
        await syncInvocation(b, idB);

        const missing = await getStatus(a, idA, null);
        expectError(missing, 401);
        expect(missing.body.message).toBe(MISSING_KEY);
        for (const key of ['', 'whk_wrong', b.key]) {
          const res = await getStatus(a, idA, key);
          expectError(res, 401);
          expect(res.text).not.toMatch(/mine/);
        }
        const foreign = await getStatus(a, idB); // A's key and URL, B's run
        expectError(foreign, 404);
        expect(foreign.text).not.toMatch(/mine/);
        for (const invocationId of ['inv_AAAAAAAAAAAAAAAAAAAAAA', 'inv_x', '..%2Fx', '%00', a.id])
          expectError(await getStatus(a, invocationId), 404);
        expectError(
          await request(`${t.baseUrl}/webhooks/trg_CCCCCCCCCCCCCCCC/trigger/invocation/${idA}`, { headers: { 'x-key': a.key } }),
          404,
        );
        // B's own run is still there for B.
        expect((await getStatus(b, idB)).body.outputs).toEqual([{ title: 'mine', message: 'b' }]);
      });
    });

    describe('POST /webhooks/:triggerId/trigger/invocation/:invocationId/cancel', () => {
      it('cancels a running run: its signal fires, a waiting sync returns at once, and nothing is refunded', async () => {
        const slow = await createTrigger(t, 'abortable', 'cancel running');
        const id = await startRun(slow, { ms: 3000 });
        expect(creditsRow(t.dbFile, ACCOUNT)).toBe(999);
        await untilStored(t, slow, id, 'running');
        const bus = t.app.get<ClusterBus, InMemoryClusterBus>(ClusterBus);
        const waiting = syncInvocation(slow, id);
        await until(() => bus.waitingIds === 1, 1000, 'the sync request to wait');

        const t0 = performance.now();
        const res = await cancelRun(slow, id);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({
          success: false,
          invocation: { id, status: 'cancelled', createdAt: ISO, startedAt: ISO, finishedAt: ISO },
          outputs: [],
          error: CANCELLED_ERROR,
        });
        const sync = await waiting;
        const afterCancel = performance.now() - t0;
        expect(sync.status).toBe(200);
        expect(sync.body).toEqual({ success: false, status: 'cancelled', outputs: [], error: CANCELLED_ERROR });
        expect(afterCancel).toBeLessThan(1000);
        expect(sync.elapsedMs).toBeLessThan(2000); // the bot would have slept 3 s

        await until(() => botLog.signals.some((s) => s.invocationId === id), 1000, 'the bot to see its signal');
        const signal = botLog.signals.find((s) => s.invocationId === id)!;
        expect(signal.aborted).toBe(true);
        expect(signal.reason).toBeInstanceOf(Error);
        expect((signal.reason as Error).message).toBe('The run was cancelled');

        expect(creditsRow(t.dbFile, ACCOUNT)).toBe(999); // it ran: no refund
        expect(rowOf(t, slow, id)).toMatchObject({ status: 'cancelled', credits: 1 });
        expect(rowOf(t, slow, id)!.started_at).not.toBeNull();
      });

      it('answers 404 for unknown, malformed or another trigger’s invocations and 401 for a wrong key, leaving the run alone', async () => {
        const a = await createTrigger(t, 'abortable', 'cancel A');
        const b = await createTrigger(t, 'abortable', 'cancel B');
        const idA = await startRun(a, { ms: 400 });
        const idB = await startRun(b, { ms: 400 });

        expectError(await cancelRun(a, idB), 404); // A's key and URL, B's run
        for (const invocationId of ['inv_AAAAAAAAAAAAAAAAAAAAAA', 'inv_x', '..%2Fx']) expectError(await cancelRun(a, invocationId), 404);
        expectError(
          await request(`${t.baseUrl}/webhooks/trg_CCCCCCCCCCCCCCCC/trigger/invocation/${idA}/cancel`, {
            method: 'POST',
            headers: { 'x-key': a.key },
          }),
          404,
        );
        expectError(await cancelRun(a, idA, null), 401);
        for (const key of ['whk_wrong', b.key]) {
          const res = await cancelRun(a, idA, key);
          expectError(res, 401);
          expect(res.body.message).toBe(INVALID_KEY);
        }
        // Neither run was touched: both finish normally.
        expect((await syncInvocation(a, idA)).body).toEqual({ success: true, outputs: [{ title: 'slept', message: '400' }] });
        expect((await syncInvocation(b, idB)).body).toEqual({ success: true, outputs: [{ title: 'slept', message: '400' }] });
      });

      it('ignores whatever body the cancel POST carries: none, empty or malformed JSON, text, 200 kB', async () => {
        const slow = await createTrigger(t, 'abortable', 'cancel bodies');
        const bodies: Array<[Record<string, string>, string | undefined]> = [
          [{}, undefined],
          [{ 'content-type': 'application/json' }, '{}'],
          [{ 'content-type': 'application/json' }, undefined], // what many JSON clients send for a body-less POST
          [{ 'content-type': 'application/json' }, '{'],
          [{ 'content-type': 'text/plain' }, 'please stop'],
          [{ 'content-type': 'application/json' }, JSON.stringify({ pad: 'x'.repeat(200_000) })],
        ];
        for (const [headers, body] of bodies) {
          const id = await startRun(slow, { ms: 3000 });
          // The key is still checked first, whatever the body.
          expectError(await cancelRun(slow, id, 'whk_wrong', { headers, body }), 401);
          const res = await cancelRun(slow, id, undefined, { headers, body });
          expect(res.status).toBe(200);
          expect(res.body.invocation).toMatchObject({ id, status: 'cancelled' });
        }
      });

      it('changes a state once: of 5 concurrent cancels one wins, the rest get 409, and a finished run stays as it was', async () => {
        const abortable = await createTrigger(t, 'abortable', 'cancel race');
        const id = await startRun(abortable, { ms: 3000 });
        await untilStored(t, abortable, id, 'running');
        const results = await Promise.all(Array.from({ length: 5 }, () => cancelRun(abortable, id)));
        expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
        for (const r of results.filter((r) => r.status === 409)) {
          expectError(r, 409);
          expect(r.body.message).toMatch(/already finished \(cancelled\)/);
        }
        const cancelledRow = rowOf(t, abortable, id)!;
        expect(cancelledRow.status).toBe('cancelled');
        expect(eventsOf(events, id).filter((e) => e.name === WEBHOOK_EVENTS.cancelled)).toHaveLength(1);
        // The bot then rejects with its signal's reason; that outcome is not stored over the cancel.
        await until(() => botLog.signals.some((s) => s.invocationId === id), 1000, 'the bot to see its signal');
        await t.app.get(InvocationExecutor).settled(id); // its outcome was stored or dropped
        expect(rowOf(t, abortable, id)).toEqual(cancelledRow);

        // Runs that ended by themselves cannot be cancelled either, and nothing about them changes.
        const echo = await createTrigger(t, 'echo', 'finished');
        const fail = await createTrigger(t, 'fail', 'finished');
        for (const [trigger, runId] of [
          [echo, await startRun(echo, { done: 'yes' })],
          [fail, await startRun(fail, { message: 'done badly' })],
        ] as const) {
          const finished = await syncInvocation(trigger, runId);
          expect(finished.status).toBe(200);
          const rowBefore = rowOf(t, trigger, runId)!;
          const entryBefore = await historyEntry(t, trigger.botId, runId);
          const creditsBefore = creditsRow(t.dbFile, ACCOUNT);
          const res = await cancelRun(trigger, runId);
          expectError(res, 409);
          expect(res.body.message).toMatch(new RegExp(`already finished \\(${rowBefore.status}\\)`));
          expect(rowOf(t, trigger, runId)).toEqual(rowBefore);
          expect(await historyEntry(t, trigger.botId, runId)).toEqual(entryBefore);
          expect(creditsRow(t.dbFile, ACCOUNT)).toBe(creditsBefore);
          expect((await syncInvocation(trigger, runId)).body).toEqual(finished.body);
        }
      });
    });

    describe('failure shape', () => {
      it('answers failed, cancelled and timed_out runs with success false, the status and { message, code? } on sync and status, never a stack', async () => {
        const fail = await createTrigger(t, 'fail', 'shapes');
        const bad = await createTrigger(t, 'bad-outputs', 'shapes');
        const limited = await createTrigger(t, 'limited', 'shapes');
        const slow = await createTrigger(t, 'abortable', 'shapes');
        const cancelled = await startRun(slow, { ms: 3000 });
        await untilStored(t, slow, cancelled, 'running');
        await cancelRun(slow, cancelled);
        const cases: Array<[TestTrigger, string, string, { message: string; code?: string }]> = [
          [fail, await startRun(fail, { message: 'boom' }), 'failed', { message: 'boom' }],
          [bad, await startRun(bad, {}), 'failed', { message: expect.stringMatching(/invalid outputs/), code: 'invalid_outputs' }],
          [limited, await startRun(limited, { ms: 2000 }), 'timed_out', TIMEOUT_ERROR(200)],
          [slow, cancelled, 'cancelled', CANCELLED_ERROR],
        ];
        for (const [trigger, id, status, error] of cases) {
          const sync = await syncInvocation(trigger, id);
          expect(sync.status).toBe(200);
          expect(sync.body).toEqual({ success: false, status, outputs: [], error });
          expectNoStack(sync);
          const res = await getStatus(trigger, id);
          expect(res.status).toBe(200);
          expect(res.body).toEqual({
            success: false,
            invocation: { id, status, createdAt: ISO, startedAt: ISO, finishedAt: ISO },
            outputs: [],
            error,
          });
          expectNoStack(res);
        }
      });
    });
  });

  describe('with maxConcurrentRuns 1 and syncTimeoutMs 500', () => {
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    let occupier: TestTrigger;
    let quick: TestTrigger;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, ONE_RUN_SLOT_APP);
      events = captureEvents(t);
      occupier = await createTrigger(t, 'abortable', 'occupier');
      quick = await createTrigger(t, 'quick', 'behind it');
    });
    afterAll(() => t.close());
    beforeEach(() => t.admin.setCredits(ACCOUNT, 1000));

    it('cancels a queued run once (5 concurrent cancels), refunds it once, and never starts it', async () => {
      const busy = await startRun(occupier, { ms: 600 });
      const queued = await startRun(quick, { behind: 'occupier' });
      expect(creditsRow(t.dbFile, ACCOUNT)).toBe(998);
      expect((await getStatus(quick, queued)).body.invocation).toMatchObject({ status: 'queued', startedAt: null });
      const bus = t.app.get<ClusterBus, InMemoryClusterBus>(ClusterBus);
      const waiting = syncInvocation(quick, queued);
      await until(() => bus.waitingIds === 1, 400, 'the sync request to wait');

      const t0 = performance.now();
      const results = await Promise.all(Array.from({ length: 5 }, () => cancelRun(quick, queued)));
      const sync = await waiting;
      expect(sync.status).toBe(200);
      expect(sync.body).toEqual({ success: false, status: 'cancelled', outputs: [], error: CANCELLED_ERROR });
      expect(performance.now() - t0).toBeLessThan(400); // answered by the cancel, not by syncTimeoutMs
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
      const ok = results.find((r) => r.status === 200)!;
      expect(ok.body).toEqual({
        success: false,
        invocation: { id: queued, status: 'cancelled', createdAt: ISO, startedAt: null, finishedAt: ISO },
        outputs: [],
        error: CANCELLED_ERROR,
      });
      for (const r of results.filter((r) => r.status === 409)) expectError(r, 409);
      expect(creditsRow(t.dbFile, ACCOUNT)).toBe(999); // refunded exactly once

      // The slot frees up; the cancelled run is not run later: the next run, behind it in line, gets the slot
      // and finishes, so the cancelled one would have started before it.
      expect((await syncUntilFinished(occupier, busy)).body.success).toBe(true);
      const next = await startRun(quick, { next: 1 });
      expect((await syncUntilFinished(quick, next)).body.success).toBe(true);
      expect(botLog.started.some((s) => s.invocationId === next)).toBe(true);
      expect(botLog.started.some((s) => s.invocationId === queued)).toBe(false);
      expect(rowOf(t, quick, queued)).toMatchObject({ status: 'cancelled', started_at: null });
      expect((await getStatus(quick, queued)).body.invocation).toMatchObject({ status: 'cancelled', startedAt: null });
      expect(eventsOf(events, queued)).toEqual([
        {
          name: WEBHOOK_EVENTS.queued,
          payload: { invocationId: queued, triggerId: quick.id, botId: 'quick', accountId: ACCOUNT, status: 'queued' },
        },
        {
          name: WEBHOOK_EVENTS.cancelled,
          payload: { invocationId: queued, triggerId: quick.id, botId: 'quick', accountId: ACCOUNT, status: 'cancelled' },
        },
      ]);
    });

    it('lets exactly one of 5 cancels that all saw the run unfinished store it (the UPDATE is conditional), refunding a queued run once', async () => {
      // Over HTTP the cancels above arrive one after another; called together inside the service, all
      // five read the run before any of them writes, so only the conditional UPDATE can stop four of them.
      const service = t.app.get(InvocationService);
      const busy = await startRun(occupier, { ms: 3000 });
      const queued = await startRun(quick, { race: 1 });
      await untilStored(t, occupier, busy, 'running');
      expect(creditsRow(t.dbFile, ACCOUNT)).toBe(998);
      for (const [trigger, id] of [
        [quick, queued],
        [occupier, busy],
      ] as const) {
        const record = (await t.app.get(TriggerRepository).findActive(trigger.id))!;
        const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => service.cancel(record, id)));
        expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
        const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
        expect(refused).toHaveLength(4);
        for (const r of refused) expect(r.reason).toBeInstanceOf(InvocationAlreadyFinishedError);
        expect(eventsOf(events, id).filter((e) => e.name === WEBHOOK_EVENTS.cancelled)).toHaveLength(1);
        expect(rowOf(t, trigger, id)!.status).toBe('cancelled');
      }
      expect(creditsRow(t.dbFile, ACCOUNT)).toBe(999); // the queued run's credit, once; the running one's stays spent
    });
  });
});
