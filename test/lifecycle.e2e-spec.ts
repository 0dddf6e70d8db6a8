import type { LoggerService } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { CompletionBus, WEBHOOK_EVENTS, type InvocationView } from '../src/index.js';
import { InMemoryCompletionBus } from '../src/completion/in-memory-completion.bus.js';
import { HistoryRetention } from '../src/lifecycle/history-retention.js';
import { InvocationAlreadyFinishedError } from '../src/errors/webhook-trigger.errors.js';
import { InvocationService } from '../src/invocations/invocation.service.js';
import { TriggerRepository } from '../src/persistence/trigger.repository.js';
import { BAD_TIMEOUT, IDEMPOTENCY_KEY_REUSED, INVALID_KEY, MISSING_KEY, TOO_MANY_FAILED_KEYS } from '../src/errors/webhook-trigger.messages.js';
import { botLog, LIFECYCLE_BOTS } from './fixtures/lifecycle-bots.js';
import { creditsRow, invocationRows, writeDb, type InvocationRow } from './helpers/db.js';
import {
  expectError,
  request,
  sleep,
  startRun,
  syncInvocation,
  syncUntilFinished,
  triggerBot,
  until,
  type HttpResult,
} from './helpers/http.js';
import { ADAPTERS, UNTHROTTLED, createTrigger, startWebhookApp, type TestTrigger, type WebhookTestApp } from './helpers/webhook-app.js';
import { captureEvents, historyEntry, type CapturedEvent } from './helpers/events.js';

const ACCOUNT = 'acct';
const DAY_MS = 24 * 60 * 60 * 1000;
const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const CANCELLED_ERROR = { message: 'The run was cancelled', code: 'cancelled' };
const TIMEOUT_ERROR = (ms: number) => ({ message: `The bot did not finish within ${ms} ms`, code: 'timeout' });

// ---- the two new endpoints, and sync with ?timeout ------------------------------------------------

const keyHeaders = (t: TestTrigger, key: string | null | undefined): Record<string, string> => {
  const k = key === undefined ? t.key : key;
  return k === null ? {} : { 'x-key': k };
};

/** GET /webhooks/:triggerId/trigger/invocation/:invocationId */
function getStatus(t: TestTrigger, invocationId: string, key?: string | null, headers: Record<string, string> = {}): Promise<HttpResult> {
  return request(`${t.url}/invocation/${invocationId}`, { headers: { ...keyHeaders(t, key), ...headers } });
}

/** POST /webhooks/:triggerId/trigger/invocation/:invocationId/cancel */
function cancelRun(t: TestTrigger, invocationId: string, key?: string | null, init: { headers?: Record<string, string>; body?: string } = {}): Promise<HttpResult> {
  return request(`${t.url}/invocation/${invocationId}/cancel`, { method: 'POST', headers: { ...keyHeaders(t, key), ...init.headers }, body: init.body });
}

/** GET …/sync?timeout=<timeout> */
function syncWithTimeout(t: TestTrigger, invocationId: string, timeout: string): Promise<HttpResult> {
  return request(`${t.syncUrl(invocationId)}?timeout=${timeout}`, { headers: keyHeaders(t, undefined) });
}

/** The stored row of a run, read from the SQLite file. */
function rowOf(app: WebhookTestApp, t: TestTrigger, invocationId: string): InvocationRow | undefined {
  return invocationRows(app.dbFile, t.id).find((r) => r.id === invocationId);
}

function untilStored(app: WebhookTestApp, t: TestTrigger, invocationId: string, status: string, timeoutMs = 2_000): Promise<void> {
  return until(() => rowOf(app, t, invocationId)?.status === status, timeoutMs, `${invocationId} to be stored ${status}`);
}


/** Nothing that looks like a stack trace or a source location anywhere in the body. */
function expectNoStack(res: HttpResult): void {
  expect(res.text).not.toMatch(/stack|\n\s+at |\bat .*\(|\.[tj]s:\d+/);
}

// ---- events -------------------------------------------------------------------------------------------



const eventsOf = (events: CapturedEvent[], invocationId: string) => events.filter((e) => e.payload.invocationId === invocationId);

/** Records every line the app logs, at every level. */
class RecordingLogger implements LoggerService {
  readonly lines: string[] = [];
  private record(level: string, args: unknown[]): void {
    this.lines.push(`${level} ${args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a) ?? String(a))).join(' ')}`);
  }
  log(...args: unknown[]): void { this.record('log', args); }
  error(...args: unknown[]): void { this.record('error', args); }
  warn(...args: unknown[]): void { this.record('warn', args); }
  debug(...args: unknown[]): void { this.record('debug', args); }
  verbose(...args: unknown[]): void { this.record('verbose', args); }
  fatal(...args: unknown[]): void { this.record('fatal', args); }
}

describe.each(ADAPTERS)('run lifecycle on %s', (_adapterName, makeAdapter) => {
  describe('with room for 16 runs and a 1 s idempotency TTL', () => {
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: { rateLimits: UNTHROTTLED, idempotencyTtlMs: 1_000, shutdownGraceMs: 200, failedKeyLimit: { limit: 1_000, ttlMs: 60_000 } },
        events: true,
        providers: LIFECYCLE_BOTS,
      });
      events = captureEvents(t);
    });
    afterAll(() => t.close());
    beforeEach(() => t.admin.setCredits(ACCOUNT, 1000));

    describe('states in history', () => {
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
        await sleep(50);
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
        for (const invocationId of ['inv_AAAAAAAAAAAAAAAAAAAAAA', 'inv_x', '..%2Fx', '%00', a.id]) expectError(await getStatus(a, invocationId), 404);
        expectError(await request(`${t.baseUrl}/webhooks/trg_CCCCCCCCCCCCCCCC/trigger/invocation/${idA}`, { headers: { 'x-key': a.key } }), 404);
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
        const bus = t.app.get(CompletionBus) as InMemoryCompletionBus;
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
        expectError(await request(`${t.baseUrl}/webhooks/trg_CCCCCCCCCCCCCCCC/trigger/invocation/${idA}/cancel`, { method: 'POST', headers: { 'x-key': a.key } }), 404);
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
    });

    describe('GET …/sync?timeout=<seconds>', () => {
      it('waits the given seconds, then answers 408 with the run’s status', async () => {
        const slow = await createTrigger(t, 'abortable', 'wait 1 s');
        const id = await startRun(slow, { ms: 3000 });
        const res = await syncWithTimeout(slow, id, '1');
        expectError(res, 408);
        expect(res.body.status).toBe('running');
        expect(res.body.message).toMatch(/1000 ms/);
        expect(res.elapsedMs).toBeGreaterThanOrEqual(900);
        expect(res.elapsedMs).toBeLessThan(2500);
        expect((t.app.get(CompletionBus) as InMemoryCompletionBus).waitingIds).toBe(0);

        expect((await cancelRun(slow, id)).status).toBe(200);
        // 300 is allowed, and a finished run answers at once.
        const finished = await syncWithTimeout(slow, id, '300');
        expect(finished.status).toBe(200);
        expect(finished.body).toEqual({ success: false, status: 'cancelled', outputs: [], error: CANCELLED_ERROR });
        expect(finished.elapsedMs).toBeLessThan(500);
      });

      it('answers 400 at once for a timeout that is not a whole number from 1 to 300', async () => {
        const echo = await createTrigger(t, 'echo', 'bad waits');
        const id = await startRun(echo, { a: 1 });
        for (const timeout of ['0', '301', 'abc', '1.5', '-1', '', '1e2', '%201', '1000', '1&timeout=2', '0x1']) {
          const res = await syncWithTimeout(echo, id, timeout);
          expectError(res, 400);
          expect(res.body.message).toBe(BAD_TIMEOUT);
          expect(res.elapsedMs).toBeLessThan(500);
        }
        expect((await syncWithTimeout(echo, id, '1')).body).toEqual({ success: true, outputs: [{ title: 'a', message: '1' }] });
      });
    });

    describe('bot time limit', () => {
      it('stops a bot at its own timeoutMs: the run ends timed_out with code timeout', async () => {
        const limited = await createTrigger(t, 'limited', 'time limit');
        const id = await startRun(limited, { ms: 2000 });
        const sync = await syncInvocation(limited, id);
        expect(sync.status).toBe(200);
        expect(sync.body).toEqual({ success: false, status: 'timed_out', outputs: [], error: TIMEOUT_ERROR(200) });
        expect(sync.elapsedMs).toBeGreaterThanOrEqual(150);
        expect(sync.elapsedMs).toBeLessThan(1500);
        const entry = (await historyEntry(t, 'limited', id))!;
        const ranMs = entry.finishedAt!.getTime() - entry.startedAt!.getTime();
        expect(ranMs).toBeGreaterThanOrEqual(195);
        expect(ranMs).toBeLessThan(1000);
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

    describe('Idempotency-Key', () => {
      it('refuses the same key with another body (422, nothing charged) and starts a new run once the key has expired', async () => {
        const echo = await createTrigger(t, 'echo', 'idem ttl');
        const first = await triggerBot(echo, { n: 1 }, { headers: { 'Idempotency-Key': 'order-7' } });
        expect(first.status).toBe(200);
        const firstId = first.body.invocation.id;
        const other = await triggerBot(echo, { n: 2 }, { headers: { 'Idempotency-Key': 'order-7' } });
        expectError(other, 422);
        expect(other.body.message).toBe(IDEMPOTENCY_KEY_REUSED);
        expect(creditsRow(t.dbFile, ACCOUNT)).toBe(999);
        expect(invocationRows(t.dbFile, echo.id)).toHaveLength(1);
        expect((await triggerBot(echo, { n: 1 }, { headers: { 'Idempotency-Key': 'order-7' } })).body.invocation.id).toBe(firstId);

        await sleep(1_100); // idempotencyTtlMs is 1 s
        const again = await triggerBot(echo, { n: 1 }, { headers: { 'Idempotency-Key': 'order-7' } });
        expect(again.status).toBe(200);
        expect(again.body.invocation.id).not.toBe(firstId);
        expect(creditsRow(t.dbFile, ACCOUNT)).toBe(998);
        expect(invocationRows(t.dbFile, echo.id).map((r) => r.id)).toEqual([firstId, again.body.invocation.id]);
        expect((await syncInvocation(echo, again.body.invocation.id)).body).toEqual({ success: true, outputs: [{ title: 'n', message: '1' }] });
        // The new run now holds the key: a repeat returns it.
        expect((await triggerBot(echo, { n: 1 }, { headers: { 'Idempotency-Key': 'order-7' } })).body.invocation.id).toBe(again.body.invocation.id);
      });
    });

    describe('events', () => {
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

  describe('with maxConcurrentRuns 1 and syncTimeoutMs 500', () => {
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    let occupier: TestTrigger;
    let quick: TestTrigger;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 1, syncTimeoutMs: 500, shutdownGraceMs: 200 },
        events: true,
        providers: LIFECYCLE_BOTS,
      });
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
      const bus = t.app.get(CompletionBus) as InMemoryCompletionBus;
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

      // The slot frees up; the cancelled run is not run later.
      expect((await syncUntilFinished(occupier, busy)).body.success).toBe(true);
      await sleep(150);
      expect(botLog.started.some((s) => s.invocationId === queued)).toBe(false);
      expect(rowOf(t, quick, queued)).toMatchObject({ status: 'cancelled', started_at: null });
      expect((await getStatus(quick, queued)).body.invocation).toMatchObject({ status: 'cancelled', startedAt: null });
      expect(eventsOf(events, queued)).toEqual([
        { name: WEBHOOK_EVENTS.queued, payload: { invocationId: queued, triggerId: quick.id, botId: 'quick', accountId: ACCOUNT, status: 'queued' } },
        { name: WEBHOOK_EVENTS.cancelled, payload: { invocationId: queued, triggerId: quick.id, botId: 'quick', accountId: ACCOUNT, status: 'cancelled' } },
      ]);
      // The next run still gets the slot.
      const next = await startRun(quick, { next: 1 });
      expect((await syncUntilFinished(quick, next)).body.success).toBe(true);
    });

    it('lets exactly one of 5 cancels that all saw the run unfinished store it (the UPDATE is conditional), refunding a queued run once', async () => {
      // Over HTTP the cancels above arrive one after another; called together inside the service, all
      // five read the run before any of them writes, so only the conditional UPDATE can stop four of them.
      const service = t.app.get(InvocationService);
      const busy = await startRun(occupier, { ms: 3000 });
      const queued = await startRun(quick, { race: 1 });
      await untilStored(t, occupier, busy, 'running');
      expect(creditsRow(t.dbFile, ACCOUNT)).toBe(998);
      for (const [trigger, id] of [[quick, queued], [occupier, busy]] as const) {
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

    it('frees the slot of a bot that ignores its signal at its time limit: the run behind it starts soon after', async () => {
      const stubborn = await createTrigger(t, 'stubborn', 'ignores signal');
      const t0 = performance.now();
      const ignoring = await startRun(stubborn, { ms: 4000 });
      const behind = await startRun(quick, { behind: 'stubborn' });
      expect((await getStatus(quick, behind)).body.invocation.status).toBe('queued');

      const res = await syncUntilFinished(quick, behind);
      const elapsed = performance.now() - t0;
      expect(res.body).toEqual({ success: true, outputs: [{ title: 'quick', message: '{"behind":"stubborn"}' }] });
      expect(elapsed).toBeGreaterThanOrEqual(190);
      expect(elapsed).toBeLessThan(1500); // not after the ignoring bot's own 4 s

      const stubbornStart = botLog.started.find((s) => s.invocationId === ignoring)!;
      const signal = botLog.signals.find((s) => s.invocationId === ignoring)!;
      const behindStart = botLog.started.find((s) => s.invocationId === behind)!;
      expect(signal).toMatchObject({ bot: 'stubborn', aborted: true });
      expect((signal.reason as Error).message).toBe(TIMEOUT_ERROR(200).message);
      expect(signal.at - stubbornStart.at).toBeGreaterThanOrEqual(190);
      expect(behindStart.at).toBeGreaterThanOrEqual(signal.at);
      expect(behindStart.at - signal.at).toBeLessThan(500);
      expect(botLog.stubbornFinished).not.toContain(ignoring); // it is still sleeping, ignoring its signal

      const status = await getStatus(stubborn, ignoring);
      expect(status.body).toEqual({
        success: false,
        invocation: { id: ignoring, status: 'timed_out', createdAt: ISO, startedAt: ISO, finishedAt: ISO },
        outputs: [],
        error: TIMEOUT_ERROR(200),
      });
      const ranMs = Date.parse(status.body.invocation.finishedAt) - Date.parse(status.body.invocation.startedAt);
      expect(ranMs).toBeGreaterThanOrEqual(195);
      expect(ranMs).toBeLessThan(1000);
      const timedOut = eventsOf(events, ignoring).find((e) => e.name === WEBHOOK_EVENTS.timed_out)!;
      expect(timedOut.payload.durationMs).toBe(ranMs);
    });

    it('frees the slot at once when a bot that ignores its signal is cancelled, and does not time it out later', async () => {
      const stubborn = await createTrigger(t, 'stubborn', 'cancelled while ignoring');
      const ignoring = await startRun(stubborn, { ms: 4000 });
      const behind = await startRun(quick, { behind: 'cancelled stubborn' });
      await untilStored(t, stubborn, ignoring, 'running');
      expect((await cancelRun(stubborn, ignoring)).body.invocation.status).toBe('cancelled'); // so within its 200 ms limit
      const res = await syncUntilFinished(quick, behind);
      expect(res.body.success).toBe(true);
      const signal = botLog.signals.find((s) => s.invocationId === ignoring)!;
      expect((signal.reason as Error).message).toBe(CANCELLED_ERROR.message);
      const behindStart = botLog.started.find((s) => s.invocationId === behind)!;
      expect(behindStart.at).toBeGreaterThanOrEqual(signal.at);
      expect(behindStart.at - signal.at).toBeLessThan(150); // freed by the cancel, not by the time limit or the bot's 4 s
      await sleep(300); // past the stubborn bot's 200 ms limit
      expect(eventsOf(events, ignoring).map((e) => e.name)).toEqual([WEBHOOK_EVENTS.queued, WEBHOOK_EVENTS.started, WEBHOOK_EVENTS.cancelled]);
      expect(rowOf(t, stubborn, ignoring)!.status).toBe('cancelled');
      expect(botLog.stubbornFinished).not.toContain(ignoring);
    });

    it('counts a bot’s time limit from its start, not from when it was queued', async () => {
      const limited = await createTrigger(t, 'limited', 'queued first');
      const busy = await startRun(occupier, { ms: 400 });
      const waited = await startRun(limited, { ms: 100 }); // 100 ms of work, 200 ms limit, ~400 ms in the queue
      const res = await syncUntilFinished(limited, waited);
      expect(res.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '100' }] });
      const entry = (await historyEntry(t, 'limited', waited))!;
      expect(entry.startedAt!.getTime() - entry.createdAt.getTime()).toBeGreaterThanOrEqual(300);
      expect((await syncUntilFinished(occupier, busy)).body.success).toBe(true);
    });

    it('caps ?timeout by syncTimeoutMs, and a 408 for a run waiting for a slot says queued', async () => {
      const busy = await startRun(occupier, { ms: 3000 });
      const queued = await startRun(quick, { waits: 'yes' });
      const res = await syncWithTimeout(occupier, busy, '5');
      expectError(res, 408);
      expect(res.body.status).toBe('running');
      expect(res.body.message).toMatch(/500 ms/);
      expect(res.elapsedMs).toBeGreaterThanOrEqual(450);
      expect(res.elapsedMs).toBeLessThan(1500);

      const waiting = await syncWithTimeout(quick, queued, '1');
      expectError(waiting, 408);
      expect(waiting.body.status).toBe('queued');
      expect(waiting.elapsedMs).toBeLessThan(1500);

      expect((await cancelRun(occupier, busy)).status).toBe(200);
      expect((await syncUntilFinished(quick, queued)).body.success).toBe(true);
    });

    it('deletes finished runs older than historyRetentionDays (30) when the retention job sweeps, and keeps queued and recent ones', async () => {
      const echo = await createTrigger(t, 'echo', 'retention');
      const fail = await createTrigger(t, 'fail', 'retention');
      const limited = await createTrigger(t, 'limited', 'retention');
      const finished: Array<[TestTrigger, string]> = [
        [echo, await startRun(echo, { old: 1 })],
        [fail, await startRun(fail, { message: 'old' })],
        [limited, await startRun(limited, { ms: 2000 })],
      ];
      for (const [trigger, id] of finished) await syncUntilFinished(trigger, id);
      const oldCancelled = await startRun(occupier, { ms: 3000 });
      await cancelRun(occupier, oldCancelled);
      finished.push([occupier, oldCancelled]);
      const recent = await startRun(echo, { recent: 1 });
      const borderline = await startRun(echo, { days: 29 });
      await syncUntilFinished(echo, recent);
      await syncUntilFinished(echo, borderline);
      // A run that waits for the slot, accepted long ago (its process died, say): never deleted.
      const busy = await startRun(occupier, { ms: 3000 });
      const stillQueued = await startRun(quick, { old: 'queued' });
      expect(rowOf(t, quick, stillQueued)!.status).toBe('queued');

      const now = Date.now();
      const old = now - 31 * DAY_MS;
      for (const [, id] of finished) expect(writeDb(t.dbFile, 'UPDATE webhook_invocations SET created_at = ? WHERE id = ?', old, id)).toBe(1);
      writeDb(t.dbFile, 'UPDATE webhook_invocations SET created_at = ? WHERE id = ?', old, stillQueued);
      writeDb(t.dbFile, 'UPDATE webhook_invocations SET created_at = ? WHERE id = ?', now - 29 * DAY_MS, borderline);
      expect(finished.map(([trigger, id]) => rowOf(t, trigger, id)!.status).sort()).toEqual(['cancelled', 'failed', 'succeeded', 'timed_out']);

      expect(await t.app.get(HistoryRetention).sweep()).toBe(4);
      for (const [trigger, id] of finished) {
        expectError(await getStatus(trigger, id), 404);
        expect(rowOf(t, trigger, id)).toBeUndefined();
        expect(await historyEntry(t, trigger.botId, id)).toBeUndefined();
      }
      expect((await getStatus(echo, recent)).body.invocation.status).toBe('succeeded');
      expect((await getStatus(echo, borderline)).body.invocation.status).toBe('succeeded');
      expect((await getStatus(quick, stillQueued)).body.invocation.status).toBe('queued');

      // The old queued run still runs once the slot frees.
      await cancelRun(occupier, busy);
      expect((await syncUntilFinished(quick, stillQueued)).body.success).toBe(true);
    });
  });

  describe('with maxConcurrentRuns 2 and botTimeoutMs 500', () => {
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 2, botTimeoutMs: 500, shutdownGraceMs: 200 },
        events: true,
        providers: LIFECYCLE_BOTS,
      });
      events = captureEvents(t);
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    it('runs at most 2 at once; the others wait as queued and start in the order they came', async () => {
      const slow = await createTrigger(t, 'abortable', 'bounded');
      const t0 = performance.now();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(await startRun(slow, { ms: 250, i }));
      const statuses = await Promise.all(ids.map(async (id) => (await getStatus(slow, id)).body.invocation.status as string));
      expect(statuses.filter((s) => s === 'running').length).toBeLessThanOrEqual(2);
      expect(statuses.slice(2)).toEqual(['queued', 'queued', 'queued']);

      const results = await Promise.all(ids.map((id) => syncInvocation(slow, id)));
      expect(results.map((r) => r.body.success)).toEqual([true, true, true, true, true]);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(700); // three waves of 250 ms

      const started = events.filter((e) => e.name === WEBHOOK_EVENTS.started && e.payload.triggerId === slow.id).map((e) => e.payload.invocationId);
      expect(started).toEqual(ids);
      // From the stored times: never more than 2 runs overlap.
      const rows = invocationRows(t.dbFile, slow.id);
      const edges = rows.flatMap((r) => [[r.started_at!, +1], [r.finished_at!, -1]] as Array<[number, number]>).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      let running = 0;
      let peak = 0;
      for (const [, step] of edges) peak = Math.max(peak, (running += step));
      expect(peak).toBe(2);
    });

    it('applies the module-wide botTimeoutMs to bots that set no timeoutMs, and a bot’s own timeoutMs over it', async () => {
      const slow = await createTrigger(t, 'slow', 'module limit');
      const limited = await createTrigger(t, 'limited', 'own limit');
      const slowId = await startRun(slow, { ms: 5000 });
      const limitedId = await startRun(limited, { ms: 5000 });
      const slowSync = await syncInvocation(slow, slowId);
      expect(slowSync.body).toEqual({ success: false, status: 'timed_out', outputs: [], error: TIMEOUT_ERROR(500) });
      expect(slowSync.elapsedMs).toBeGreaterThanOrEqual(450);
      expect(slowSync.elapsedMs).toBeLessThan(2000);
      expect((await syncInvocation(limited, limitedId)).body).toEqual({ success: false, status: 'timed_out', outputs: [], error: TIMEOUT_ERROR(200) });
      const slowEnd = eventsOf(events, slowId).find((e) => e.name === WEBHOOK_EVENTS.timed_out)!;
      expect(slowEnd.payload.durationMs).toBeGreaterThanOrEqual(495);
      expect(slowEnd.payload.durationMs).toBeLessThan(1500);
    });
  });

  describe('with failedKeyLimit 3 per minute, 4 requests per trigger per minute and historyRetentionDays 0', () => {
    let t: WebhookTestApp;
    const logs = new RecordingLogger();
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: {
          rateLimits: { perTrigger: { limit: 4, ttlMs: 60_000 }, perAccount: { limit: 1_000, ttlMs: 60_000 } },
          failedKeyLimit: { limit: 3, ttlMs: 60_000 },
          historyRetentionDays: 0,
          shutdownGraceMs: 200,
        },
        providers: LIFECYCLE_BOTS,
        logger: logs,
      });
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    it('counts status requests toward the per-trigger limit, like sync', async () => {
      const echo = await createTrigger(t, 'echo', 'counted');
      const id = await startRun(echo, { a: 1 }); // 1
      expect((await syncInvocation(echo, id)).status).toBe(200); // 2
      expect((await getStatus(echo, id)).status).toBe(200); // 3
      expect((await getStatus(echo, id)).status).toBe(200); // 4
      for (const res of [await getStatus(echo, id), await cancelRun(echo, id), await syncInvocation(echo, id), await triggerBot(echo, { a: 2 })]) {
        expectError(res, 429);
        expect(res.body.message).toMatch(/trigger/);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      expect(invocationRows(t.dbFile, echo.id)).toHaveLength(1);
    });

    it('keeps every run when historyRetentionDays is 0', async () => {
      const echo = await createTrigger(t, 'echo', 'kept forever');
      const id = await startRun(echo, { keep: 1 });
      await syncInvocation(echo, id);
      writeDb(t.dbFile, 'UPDATE webhook_invocations SET created_at = ? WHERE id = ?', Date.now() - 10_000 * DAY_MS, id);
      expect(await t.app.get(HistoryRetention).sweep()).toBe(0);
      expect(rowOf(t, echo, id)?.status).toBe('succeeded');
      expect((await getStatus(echo, id)).body.invocation.status).toBe('succeeded');
    });

    it('answers 429 with Retry-After to an IP after 3 wrong keys, even with the right key and on another trigger; keys and inputs are never logged', async () => {
      const guarded = await createTrigger(t, 'echo', 'guarded');
      const neighbour = await createTrigger(t, 'fail', 'neighbour');
      const secretInput = `input-secret-${randomBytes(6).toString('hex')}`;
      const id = await startRun(guarded, { secret: secretInput });
      expect((await syncInvocation(guarded, id)).body.outputs).toEqual([{ title: 'secret', message: secretInput }]);
      const creditsBefore = creditsRow(t.dbFile, ACCOUNT);

      const wrongKey = `whk_WRONG${randomBytes(8).toString('hex')}`;
      // A client claiming other addresses in X-Forwarded-For is still one client (no trust proxy set).
      for (const res of [
        await triggerBot(guarded, { a: 1 }, { key: wrongKey, headers: { 'x-forwarded-for': '203.0.113.1' } }),
        await getStatus(guarded, id, wrongKey, { 'x-forwarded-for': '203.0.113.2' }),
        await syncInvocation(guarded, id, { key: wrongKey }),
      ]) {
        expectError(res, 401);
        expect(res.body.message).toBe(INVALID_KEY);
      }
      const blocked = [
        await triggerBot(guarded, { a: 2 }), // the right key
        await getStatus(guarded, id),
        await cancelRun(guarded, id),
        await triggerBot(neighbour, { message: 'x' }), // another trigger, same client IP
        await triggerBot(guarded, { a: 3 }, { key: wrongKey }),
        await triggerBot(guarded, { a: 4 }, { headers: { 'x-forwarded-for': '198.51.100.7' } }),
      ];
      expect(Number(blocked[0].headers.get('retry-after'))).toBeGreaterThanOrEqual(55); // the 60 s window has just begun
      for (const res of blocked) {
        expectError(res, 429);
        expect(res.body.message).toBe(TOO_MANY_FAILED_KEYS);
        const retryAfter = Number(res.headers.get('retry-after'));
        expect(Number.isInteger(retryAfter)).toBe(true);
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(60);
      }
      expect(invocationRows(t.dbFile, guarded.id)).toHaveLength(1);
      expect(invocationRows(t.dbFile, neighbour.id)).toHaveLength(0);
      expect(creditsRow(t.dbFile, ACCOUNT)).toBe(creditsBefore);

      expect(logs.lines.length).toBeGreaterThan(0); // the recorder does see the app's logs
      const everything = logs.lines.join('\n');
      for (const secret of [wrongKey, guarded.key, neighbour.key, secretInput]) expect(everything).not.toContain(secret);
    });
  });
});
