import { invocationRows } from '../helpers/db.js';
import { startRun, syncInvocation, syncUntilFinished, sleep } from '../helpers/http.js';
import { ADAPTERS, UNTHROTTLED, createTrigger, startWebhookApp, type WebhookTestApp } from '../helpers/webhook-app.js';
import { OtherEchoBot } from '../fixtures/bots.js';

/** How long each of account A's runs sleeps: long enough that a run queued behind them would be seen waiting. */
const SLOW_MS = 1500;

describe.each(ADAPTERS)('fairness between accounts, in process, on %s', (_name, makeAdapter) => {
  let t: WebhookTestApp;

  beforeAll(async () => {
    // 4 slots in all; maxConcurrentRunsPerAccount left to its default, half of them: 2.
    t = await startWebhookApp(makeAdapter, {
      options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 4, shutdownGraceMs: 0 },
      providers: [OtherEchoBot],
    });
    await t.admin.setCredits('acct', 1000);
    await t.admin.setCredits('other', 1000);
  });
  afterAll(() => t.close());

  it("one account's backlog never holds every slot: another account's run answers at once, and the first account's runs all finish later, at most 2 at a time", async () => {
    const slow = await createTrigger(t, 'slow', 'account A backlog');
    const otherEcho = await createTrigger(t, 'other-echo', 'account B');
    // Sample the stored rows all along: how many of A's runs are `running` at once.
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, invocationRows(t.dbFile, slow.id).filter((r) => r.status === 'running').length);
        await sleep(20);
      }
    })();
    try {
      const aIds: string[] = [];
      for (let i = 0; i < 8; i++) aIds.push(await startRun(slow, { ms: SLOW_MS, i }));

      // Without a per-account limit A's runs would hold all 4 slots and B's run would wait two of A's
      // waves (3 s) behind them.
      const t0 = performance.now();
      const bId = await startRun(otherEcho, { from: 'B' });
      const b = await syncInvocation(otherEcho, bId);
      const bMs = performance.now() - t0;
      expect(b.status).toBe(200);
      expect(b.body).toEqual({ success: true, outputs: [{ title: 'from', message: 'B' }] });
      expect(bMs).toBeLessThan(1000);
      const atB = invocationRows(t.dbFile, slow.id);
      expect(atB.filter((r) => r.status === 'running').length).toBeLessThanOrEqual(2);
      expect(atB.filter((r) => r.status === 'queued').length).toBeGreaterThanOrEqual(6);

      const results = await Promise.all(aIds.map((id) => syncUntilFinished(slow, id)));
      expect(results.map((r) => r.body?.success)).toEqual(Array(8).fill(true));
      expect(performance.now() - t0).toBeGreaterThanOrEqual(3 * SLOW_MS); // four waves of 2, the first already under way at B
    } finally {
      sampling = false;
      await sampler;
    }
    expect(peak).toBe(2);
    // From the stored times as well: never more than 2 of A's runs overlap.
    const edges = invocationRows(t.dbFile, slow.id)
      .flatMap(
        (r) =>
          [
            [r.started_at!, +1],
            [r.finished_at!, -1],
          ] as Array<[number, number]>,
      )
      .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let running = 0;
    let overlap = 0;
    for (const [, step] of edges) overlap = Math.max(overlap, (running += step));
    expect(overlap).toBe(2);
  }, 30_000);
});
