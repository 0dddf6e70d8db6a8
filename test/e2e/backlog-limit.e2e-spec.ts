/**
 * The bounded backlog (`maxQueuedRuns`): past it a trigger is answered 503 with Retry-After, before anything is
 * stored or charged; once runs start again, triggers are accepted again. One account holds half of it at most:
 * past its share its triggers are answered 429, and another account's are still accepted.
 */
import type { LoggerService } from '@nestjs/common';
import { storedCredits, storedInvocations } from '../helpers/db.js';
import { captureEvents } from '../helpers/events.js';
import { cancelRun, expectError, startRun, syncInvocation, triggerBot } from '../helpers/http.js';
import { UNTHROTTLED, createTrigger, describeOnEveryAdapterAndDatabase, startWebhookApp } from '../helpers/webhook-app.js';
import { ACCOUNT_BACKLOG_FULL, LOG_ACCOUNT_BACKLOG_FULL } from '../../src/errors/webhook-trigger.messages.js';
import { OtherSlowBot } from '../fixtures/bots.js';
import { accountBacklogShare } from '../../src/runs/run-backlog.js';

/** Runs waiting to start that the app accepts; one more run executes in its only slot. One account may hold 2. */
const MAX_QUEUED = 4;
const SHARE = accountBacklogShare(MAX_QUEUED);

/** Remembers the warnings, to count the module's notes on refusals. */
class WarningLogger implements LoggerService {
  readonly warnings: string[] = [];
  log(): void {}
  error(): void {}
  warn(message: unknown): void {
    this.warnings.push(String(message));
  }
}

describeOnEveryAdapterAndDatabase('bounded backlog (maxQueuedRuns)', ({ makeAdapter, database }) => {
  it(`accepts one running and ${MAX_QUEUED} waiting runs (${SHARE} an account: 429 past that), answers 503 with Retry-After past them, charging and storing nothing, and accepts again once they start`, async () => {
    const logger = new WarningLogger();
    const t = await startWebhookApp(makeAdapter, {
      database,
      providers: [OtherSlowBot],
      options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 1, maxQueuedRuns: MAX_QUEUED, shutdownGraceMs: 0 },
      events: true,
      logger,
    });
    try {
      await t.admin.setCredits('acct', 100);
      await t.admin.setCredits('other', 100);
      const slow = await createTrigger(t, 'slow');
      const otherSlow = await createTrigger(t, 'other-slow');
      const events = captureEvents(t);

      // The first run holds the only slot until it is cancelled; the next ones wait for it.
      const holder = await startRun(slow, { ms: 60_000 }, { headers: { 'Idempotency-Key': 'holder' } });
      const waiting: string[] = [];
      for (let i = 0; i < SHARE; i++) waiting.push(await startRun(slow, { ms: 10, i }));
      // acct holds its share of the backlog: its next trigger is refused 429, nothing stored or charged.
      const overShare = await triggerBot(slow, { ms: 10, overShare: 1 });
      expectError(overShare, 429);
      expect(overShare.headers.get('retry-after')).toBe('1');
      expect(overShare.body.message).toBe(ACCOUNT_BACKLOG_FULL(SHARE));
      // The operator hears which account it is (at most every 10 s).
      expect(logger.warnings.filter((w) => w.startsWith('Account backlog share full'))).toEqual([
        LOG_ACCOUNT_BACKLOG_FULL(SHARE, new Map([['acct', 1]])),
      ]);
      // Another account's runs are still accepted, up to the whole backlog.
      const otherWaiting: string[] = [];
      for (let i = 0; i < MAX_QUEUED - SHARE; i++) otherWaiting.push(await startRun(otherSlow, { ms: 10, i }));
      waiting.push(...otherWaiting);
      const accepted = [holder, ...waiting];
      expect(await storedCredits(t.store, 'other')).toBe(100 - otherWaiting.length);

      const refused = [await triggerBot(slow, { ms: 10, over: 1 }), await triggerBot(otherSlow, { ms: 10, over: 2 })];
      // Refused before the idempotency look-up: a repeat of an accepted run as well (documented).
      refused.push(await triggerBot(slow, { ms: 60_000 }, { headers: { 'Idempotency-Key': 'holder' } }));
      for (const res of refused) {
        expectError(res, 503);
        expect(res.headers.get('retry-after')).toBe('1');
        expect(res.body.message).toBe(
          `Too many runs are waiting to start (maxQueuedRuns: ${MAX_QUEUED}); nothing was stored or charged, retry later`,
        );
      }

      // Charged exactly for the accepted runs; no row and no event for the refused ones.
      expect(await storedCredits(t.store, 'acct')).toBe(100 - 1 - SHARE);
      const stored = [...(await storedInvocations(t.store, slow.id)), ...(await storedInvocations(t.store, otherSlow.id))];
      expect(stored.map((r) => r.id).sort()).toEqual([...accepted].sort());
      expect(new Set(events.filter((e) => e.name.endsWith('.queued')).map((e) => e.payload.invocationId))).toEqual(new Set(accepted));
      // One warning for all three refusals, not one per refusal.
      expect(logger.warnings.filter((w) => w.includes('Backlog full'))).toHaveLength(1);
      expect(logger.warnings.find((w) => w.includes('Backlog full'))).toContain(`maxQueuedRuns: ${MAX_QUEUED}`);

      // The holder's slot frees (a running run is cancelled without a refund); the waiting runs start and finish.
      expect((await cancelRun(slow, holder)).status).toBe(200);
      for (const id of waiting)
        expect((await syncInvocation(otherWaiting.includes(id) ? otherSlow : slow, id)).body).toMatchObject({ success: true });

      const again = await triggerBot(slow, { ms: 10, after: 'drain' });
      expect(again.status).toBe(200);
      expect((await syncInvocation(slow, again.body.invocation.id as string)).body).toMatchObject({ success: true });
      expect(await storedCredits(t.store, 'acct')).toBe(100 - 1 - SHARE - 1);
    } finally {
      await t.close();
    }
  }, 30_000);

  it('lets one account fill the whole backlog when every bot is of that account (nobody else to keep room for)', async () => {
    const t = await startWebhookApp(makeAdapter, {
      database,
      options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 1, maxQueuedRuns: MAX_QUEUED, shutdownGraceMs: 0 },
    });
    try {
      await t.admin.setCredits('acct', 100);
      const slow = await createTrigger(t, 'slow');
      const holder = await startRun(slow, { ms: 60_000 });
      for (let i = 0; i < MAX_QUEUED; i++) await startRun(slow, { ms: 0, i });
      expectError(await triggerBot(slow, { ms: 0, over: 1 }), 503);
      expect(await storedInvocations(t.store, slow.id)).toHaveLength(1 + MAX_QUEUED);
      await cancelRun(slow, holder);
    } finally {
      await t.close();
    }
  }, 30_000);

  it('sets no bound with maxQueuedRuns 0', async () => {
    const t = await startWebhookApp(makeAdapter, {
      database,
      options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 1, maxQueuedRuns: 0, shutdownGraceMs: 0 },
    });
    try {
      await t.admin.setCredits('acct', 100);
      const slow = await createTrigger(t, 'slow');
      const holder = await startRun(slow, { ms: 60_000 });
      const waiting: string[] = [];
      for (let i = 0; i < 20; i++) waiting.push(await startRun(slow, { ms: 0, i }));
      expect(await storedInvocations(t.store, slow.id)).toHaveLength(21);
      await cancelRun(slow, holder);
      // One slot, one account: they run in order, so the last one finishing means all did (none cut off by close).
      expect((await syncInvocation(slow, waiting.at(-1)!)).body).toMatchObject({ success: true });
    } finally {
      await t.close();
    }
  }, 30_000);
});
