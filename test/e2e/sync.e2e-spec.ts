/**
 * GET …/invocation/:invocationId/sync: waits for the run and answers its outputs or its failure; 408 after
 * syncTimeoutMs or ?timeout; woken by the run finishing, never by polling.
 */
import { ClusterBus } from '../../src/index.js';
import { InMemoryClusterBus } from '../../src/cluster/in-memory-cluster.bus.js';
import { InvocationWaiter } from '../../src/invocations/invocation.waiter.js';
import { BAD_TIMEOUT, QUERY_NOT_SINGLE, INVALID_OUTPUTS, MISSING_KEY } from '../../src/errors/webhook-trigger.messages.js';
import { historyEntry } from '../helpers/events.js';
import {
  CANCELLED_ERROR,
  cancelRun,
  expectError,
  request,
  startRun,
  syncInvocation,
  syncUntilFinished,
  syncWithTimeout,
  until,
} from '../helpers/http.js';
import {
  UNTHROTTLED,
  createTrigger,
  describeOnEveryAdapter,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  type TestTrigger,
  type WebhookTestApp,
  LIFECYCLE_APP,
  ONE_RUN_SLOT_APP,
  ROOMY_APP,
  describeApp,
} from '../helpers/webhook-app.js';

const ACCOUNT = 'acct';

describeOnEveryAdapterAndDatabase('sync', ({ makeAdapter, database }) => {
  describe('with a roomy configuration', () => {
    const shared = describeApp({ makeAdapter, database }, ROOMY_APP, { account: ACCOUNT });
    let t: WebhookTestApp;
    let echo: TestTrigger;
    beforeAll(async () => {
      t = shared.app;
      echo = await createTrigger(t, 'echo');
    });

    it('answers 200 with exactly the outputs of a successful run', async () => {
      const id = await startRun(echo, { greeting: 'hello', n: 42, nested: { a: [1] } });
      const res = await syncInvocation(echo, id);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        success: true,
        outputs: [
          { title: 'greeting', message: 'hello' },
          { title: 'n', message: '42' },
          { title: 'nested', message: '{"a":[1]}' },
        ],
      });
      // A finished run answers the same again.
      expect((await syncInvocation(echo, id)).body).toEqual(res.body);
    });

    it('applies the same 401 rules as the trigger endpoint', async () => {
      const id = await startRun(echo, { a: 1 });
      const other = await createTrigger(t, 'echo', 'other key');
      const missing = await syncInvocation(echo, id, { key: null });
      expectError(missing, 401);
      expect(missing.body.message).toBe(MISSING_KEY);
      for (const key of ['', 'whk_wrong', other.key]) expectError(await syncInvocation(echo, id, { key }), 401);
    });

    it('answers 404 for unknown or deleted triggers, and for invocations that are unknown, malformed or belong to another trigger', async () => {
      const a = await createTrigger(t, 'echo', 'sync A');
      const b = await createTrigger(t, 'echo', 'sync B');
      const idB = await startRun(b, { mine: 'b' });
      const idA = await startRun(a, { mine: 'a' });

      const foreign = await syncInvocation(a, idB); // A's id and key, B's invocation
      expectError(foreign, 404);
      expect(foreign.text).not.toMatch(/mine/);
      for (const invocationId of ['inv_AAAAAAAAAAAAAAAAAAAAAA', 'inv_x', '..%2Fx', '%00', a.id]) {
        expectError(await syncInvocation(a, invocationId), 404);
      }
      expectError(
        await request(`${t.baseUrl}/webhooks/trg_CCCCCCCCCCCCCCCC/trigger/invocation/${idA}/sync`, { headers: { 'x-key': a.key } }),
        404,
      );
      await t.admin.deleteTrigger(a.id);
      expectError(await syncInvocation(a, idA), 404);
      // B is untouched and still answers for its own run.
      expect((await syncInvocation(b, idB)).body).toEqual({ success: true, outputs: [{ title: 'mine', message: 'b' }] });
    });

    it('answers 200 with success false and the error message when the bot throws, never a stack', async () => {
      const fail = await createTrigger(t, 'fail');
      const id = await startRun(fail, { message: 'boom' });
      const res = await syncInvocation(fail, id);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: false, status: 'failed', outputs: [], error: { message: 'boom' } });
      expect(res.text).not.toMatch(/stack|\bat .*\(|\.ts:\d+/);
    });

    it('answers success false with a clear message when the bot returns invalid outputs', async () => {
      const bad = await createTrigger(t, 'bad-outputs');
      const res = await syncInvocation(bad, await startRun(bad, {}));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        success: false,
        status: 'failed',
        outputs: [],
        error: { message: INVALID_OUTPUTS, code: 'invalid_outputs' },
      });
      expect(res.body.error.message).toMatch(/title: string, message: string/);
    });

    it('is woken by the run finishing, not by polling', async () => {
      const slow = await createTrigger(t, 'slow', 'quick wake');
      const t0 = performance.now();
      const id = await startRun(slow, { ms: 200 });
      const res = await syncInvocation(slow, id);
      const elapsed = performance.now() - t0;
      expect(res.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '200' }] });
      expect(elapsed).toBeGreaterThanOrEqual(190);
      expect(elapsed).toBeLessThan(200 + 200);
    });

    it('wakes every client waiting on the same run', async () => {
      const slow = await createTrigger(t, 'slow', 'many waiters');
      const id = await startRun(slow, { ms: 150 });
      const results = await Promise.all(Array.from({ length: 5 }, () => syncInvocation(slow, id)));
      for (const r of results) expect(r.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '150' }] });
      expect(t.app.get<ClusterBus, InMemoryClusterBus>(ClusterBus).waitingIds).toBe(0);
    });

    it('releases the waiter of a client that disconnects, and the run still finishes', async () => {
      const bus = t.app.get(ClusterBus);
      expect(bus).toBeInstanceOf(InMemoryClusterBus);
      const memoryBus = bus as InMemoryClusterBus;
      expect(memoryBus.waitingIds).toBe(0);

      const slow = await createTrigger(t, 'slow', 'walk away');
      const id = await startRun(slow, { ms: 1200 });
      const client = new AbortController();
      const abandoned = syncInvocation(slow, id, { signal: client.signal }).catch((e: unknown) => e);
      await until(() => memoryBus.waitingIds === 1, 1000, 'the sync request to wait');
      client.abort();
      expect(await abandoned).toMatchObject({ name: 'AbortError' });
      await until(() => memoryBus.waitingIds === 0, 500, 'the waiter to be released');
      expect((await historyEntry(t, 'slow', id))?.status).toBe('running');

      const later = await syncInvocation(slow, id);
      expect(later.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '1200' }] });
      expect(memoryBus.waitingIds).toBe(0);
    });
  });

  describe('with maxBodyBytes 1024, syncTimeoutMs 300 and maxConcurrentRuns 2', () => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        database,
        // One account: its own cap is the total, so this measures maxConcurrentRuns alone.
        options: { rateLimits: UNTHROTTLED, maxBodyBytes: 1024, syncTimeoutMs: 300, maxConcurrentRuns: 2, maxConcurrentRunsPerAccount: 2 },
        events: true,
      });
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    it('answers 408 when the run outlasts syncTimeoutMs, and a repeated sync gets the outputs', async () => {
      const slow = await createTrigger(t, 'slow', 'timeout');
      const id = await startRun(slow, { ms: 1200 });
      const res = await syncInvocation(slow, id);
      expectError(res, 408);
      expect(res.elapsedMs).toBeGreaterThanOrEqual(290);
      expect(res.elapsedMs).toBeLessThan(1000);
      expect((await historyEntry(t, 'slow', id))?.status).toBe('running');
      expect(t.app.get<ClusterBus, InMemoryClusterBus>(ClusterBus).waitingIds).toBe(0);

      // The spec's recovery: call sync again until the run has finished.
      const last = await syncUntilFinished(slow, id);
      expect(last.status).toBe(200);
      expect(last.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '1200' }] });
    });
  });
});

describeOnEveryAdapter('sync', ({ makeAdapter }) => {
  describe('with the lifecycle app (64 run slots, a 1 s idempotency TTL)', () => {
    const shared = describeApp({ makeAdapter }, LIFECYCLE_APP, { account: ACCOUNT });
    let t: WebhookTestApp;
    beforeAll(() => (t = shared.app));

    it('waits the given seconds, then answers 408 with the run’s status', async () => {
      const slow = await createTrigger(t, 'abortable', 'wait 1 s');
      const id = await startRun(slow, { ms: 3000 });
      const res = await syncWithTimeout(slow, id, '1');
      expectError(res, 408);
      expect(res.body.status).toBe('running');
      expect(res.body.message).toMatch(/1000 ms/);
      expect(res.elapsedMs).toBeGreaterThanOrEqual(900);
      expect(res.elapsedMs).toBeLessThan(2500);
      expect(t.app.get<ClusterBus, InMemoryClusterBus>(ClusterBus).waitingIds).toBe(0);

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
        // Repeated, it is refused before its value is read (hostile-input.e2e-spec.ts has every form).
        expect(res.body.message).toBe(timeout.includes('&') ? QUERY_NOT_SINGLE('timeout') : BAD_TIMEOUT);
        expect(res.elapsedMs).toBeLessThan(500);
      }
      expect((await syncWithTimeout(echo, id, '1')).body).toEqual({ success: true, outputs: [{ title: 'a', message: '1' }] });
    });
  });

  describe('with maxConcurrentRuns 1 and syncTimeoutMs 500', () => {
    let t: WebhookTestApp;
    let occupier: TestTrigger;
    let quick: TestTrigger;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, ONE_RUN_SLOT_APP);
      occupier = await createTrigger(t, 'abortable', 'occupier');
      quick = await createTrigger(t, 'quick', 'behind it');
    });
    afterAll(() => t.close());
    beforeEach(() => t.admin.setCredits(ACCOUNT, 1000));

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
  });
});

describeOnEveryAdapter('sync waiters, a share per trigger', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;
  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, { database, options: { rateLimits: UNTHROTTLED, maxSyncWaitersPerTrigger: 2 } });
    await t.admin.setCredits(ACCOUNT, 1000);
  });
  afterAll(() => t.close());

  it("refuses a trigger's next sync past its share (429, Retry-After) while another trigger's still waits; a finished run answers", async () => {
    const [busy, other] = [await createTrigger(t, 'slow', 'busy'), await createTrigger(t, 'slow', 'other')];
    const waiter = t.app.get(InvocationWaiter);
    const id = await startRun(busy, { ms: 1_500 });
    const held = [syncInvocation(busy, id), syncInvocation(busy, id)];
    await until(() => waiter.held === 2, 2_000, 'two syncs to wait');
    const refused = await syncInvocation(busy, id);
    expectError(refused, 429);
    expect(refused.body.message).toContain('maxSyncWaitersPerTrigger');
    expect(refused.headers.get('retry-after')).toBe('5');
    const otherId = await startRun(other, { ms: 50 });
    expect((await syncInvocation(other, otherId)).body).toEqual({ success: true, outputs: [{ title: 'slept', message: '50' }] });
    expect((await syncInvocation(other, otherId)).status).toBe(200); // finished: answered at once, holding nothing
    for (const res of await Promise.all(held)) expect(res.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '1500' }] });
    expect(waiter.held).toBe(0);
  });
});
