import { startRun, syncInvocation, syncUntilFinished, until } from '../helpers/http.js';
import { ADAPTERS, UNTHROTTLED, createTrigger, startWebhookApp, type TestTrigger, type WebhookTestApp } from '../helpers/webhook-app.js';
import { botMeter, METERED_BOTS } from '../fixtures/bots.js';

/** How long each run of the deep backlogs sleeps. */
const RUN_MS = 600;

describe.each(ADAPTERS)('fair share between accounts, in process, on %s', (_name, makeAdapter) => {
  describe('without a per-account cap (the default), 4 slots', () => {
    let t: WebhookTestApp;
    let a: TestTrigger;
    let b: TestTrigger;
    let c: TestTrigger;

    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 4, shutdownGraceMs: 0 },
        providers: METERED_BOTS,
      });
      for (const account of ['acct', 'other', 'third']) await t.admin.setCredits(account, 1000);
      a = await createTrigger(t, 'metered', 'account A');
      b = await createTrigger(t, 'metered-b', 'account B');
      c = await createTrigger(t, 'metered-c', 'account C');
    });
    afterAll(() => t.close());
    beforeEach(() => botMeter.reset());

    it("an account alone uses every slot; another account's first run starts within one run's duration", async () => {
      const aIds: string[] = [];
      for (let i = 0; i < 8; i++) aIds.push(await startRun(a, { ms: 1500, i }));
      await until(() => botMeter.peak('acct') === 4, 3000, "A's runs on every slot");

      const t0 = performance.now();
      const bId = await startRun(b, { ms: 0 });
      const answer = await syncInvocation(b, bId);
      expect(answer.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '0' }] });
      expect(performance.now() - t0).toBeLessThan(1500 + 700); // one of A's runs ended, then B had the slot

      const results = await Promise.all(aIds.map((id) => syncUntilFinished(a, id)));
      expect(results.map((r) => r.body?.success)).toEqual(Array(8).fill(true));
      expect(botMeter.peak()).toBe(4);
    }, 30_000);

    it("two accounts with deep backlogs each get half the slots; a third account's first run starts within one run's duration", async () => {
      const ids: Array<[TestTrigger, string]> = [];
      // A first: it has every slot until B's runs arrive, then each freed slot goes to the account running fewer.
      for (let i = 0; i < 16; i++) ids.push([a, await startRun(a, { ms: RUN_MS, i })]);
      for (let i = 0; i < 16; i++) ids.push([b, await startRun(b, { ms: RUN_MS, i })]);
      await until(() => botMeter.steps.some((s) => s.accountId === 'other'), 3000, "B's first run");
      const bStarted = botMeter.started('other', 'first');

      await new Promise((r) => setTimeout(r, 2 * RUN_MS));
      const t0 = performance.now();
      const cId = await startRun(c, { ms: 0 });
      const answer = await syncInvocation(c, cId);
      expect(answer.body?.success).toBe(true);
      expect(performance.now() - t0).toBeLessThan(RUN_MS + 500);

      const results = await Promise.all(ids.map(([trigger, id]) => syncUntilFinished(trigger, id)));
      expect(results.every((r) => r.body?.success === true)).toBe(true);
      // While both had runs waiting (from B's first start until A's last run started), each held half the slots.
      const share = botMeter.share('acct', bStarted + RUN_MS, botMeter.started('acct', 'last'));
      expect(share).toBeGreaterThanOrEqual(0.4);
      expect(share).toBeLessThanOrEqual(0.6);
      expect(botMeter.peak()).toBe(4);
    }, 30_000);
  });

  describe('with maxConcurrentRunsPerAccount 2 (a hard cap), 4 slots', () => {
    let t: WebhookTestApp;

    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 4, maxConcurrentRunsPerAccount: 2, shutdownGraceMs: 0 },
        providers: METERED_BOTS,
      });
      for (const account of ['acct', 'other']) await t.admin.setCredits(account, 1000);
    });
    afterAll(() => t.close());

    it('never runs more than 2 of one account at once, even with free slots; another account runs beside them at once', async () => {
      botMeter.reset();
      const a = await createTrigger(t, 'metered', 'capped A');
      const b = await createTrigger(t, 'metered-b', 'B');
      const aIds: string[] = [];
      for (let i = 0; i < 6; i++) aIds.push(await startRun(a, { ms: 500, i }));
      const t0 = performance.now();
      const bId = await startRun(b, { ms: 0 });
      expect((await syncInvocation(b, bId)).body?.success).toBe(true);
      expect(performance.now() - t0).toBeLessThan(400); // a free slot: no wait for A's runs
      const results = await Promise.all(aIds.map((id) => syncUntilFinished(a, id)));
      expect(results.map((r) => r.body?.success)).toEqual(Array(6).fill(true));
      expect(botMeter.peak('acct')).toBe(2);
    }, 30_000);
  });
});
