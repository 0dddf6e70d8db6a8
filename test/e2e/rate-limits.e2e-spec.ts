/**
 * Rate limits: per trigger (trigger, sync, status and cancel counted together), per account (all of its
 * triggers together), and failed keys per client IP; 429 with Retry-After, nothing stored or charged.
 */
import type { LoggerService } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { INVALID_KEY, RATE_LIMITED, TOO_MANY_FAILED_KEYS } from '../../src/errors/webhook-trigger.messages.js';
import { ManualClock } from '../fakes/manual-clock.js';
import {} from '../fixtures/lifecycle-bots.js';
import { creditsRow, invocationRows, storedCredits, storedInvocations } from '../helpers/db.js';
import { cancelRun, expectError, getStatus, sleep, startRun, syncInvocation, triggerBot, type HttpResult } from '../helpers/http.js';
import {
  createTrigger,
  describeOnEveryAdapter,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  type WebhookTestApp,
  TIGHT_LIMITS_APP,
  describeApp,
} from '../helpers/webhook-app.js';

const ACCOUNT = 'acct';

/** Records every line the app logs, at every level. */
class RecordingLogger implements LoggerService {
  readonly lines: string[] = [];
  private record(level: string, args: unknown[]): void {
    this.lines.push(`${level} ${args.map((a) => (typeof a === 'string' ? a : (JSON.stringify(a) ?? String(a)))).join(' ')}`);
  }
  log(...args: unknown[]): void {
    this.record('log', args);
  }
  error(...args: unknown[]): void {
    this.record('error', args);
  }
  warn(...args: unknown[]): void {
    this.record('warn', args);
  }
  debug(...args: unknown[]): void {
    this.record('debug', args);
  }
  verbose(...args: unknown[]): void {
    this.record('verbose', args);
  }
  fatal(...args: unknown[]): void {
    this.record('fatal', args);
  }
}

describeOnEveryAdapterAndDatabase('rate limits', ({ makeAdapter, database }) => {
  describe('with the default rate limits (10 per second per trigger, 100 per minute per account)', () => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, { database });
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    function expectThrottled(res: HttpResult, maxSeconds: number): void {
      expectError(res, 429);
      const retryAfter = res.headers.get('retry-after');
      expect(retryAfter).toMatch(/^\d+$/);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(retryAfter)).toBeLessThanOrEqual(maxSeconds);
    }

    it('accepts exactly 10 of 15 quick requests on one trigger and answers 429 with Retry-After to the rest', async () => {
      const trigger = await createTrigger(t, 'echo', 'burst');
      const results = await Promise.all(Array.from({ length: 15 }, (_, i) => triggerBot(trigger, { i })));
      const accepted = results.filter((r) => r.status === 200);
      const throttled = results.filter((r) => r.status !== 200);
      expect(accepted).toHaveLength(10);
      expect(throttled).toHaveLength(5);
      for (const r of throttled) {
        expectThrottled(r, 1);
        expect(r.body.message).toMatch(/trigger/);
      }
      expect(await storedInvocations(t.store, trigger.id)).toHaveLength(10);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(990);

      // The limit is temporary: after Retry-After the trigger works again.
      await sleep(Number(throttled[0].headers.get('retry-after')) * 1000 + 50);
      expect((await triggerBot(trigger, { again: true })).status).toBe(200);
    });

    it('counts sync requests toward the same per-trigger limit', async () => {
      const trigger = await createTrigger(t, 'echo', 'sync counts');
      const id = await startRun(trigger, { a: 1 });
      for (let i = 0; i < 9; i++) expect((await syncInvocation(trigger, id)).status).toBe(200);
      expectThrottled(await syncInvocation(trigger, id), 1);
      expectThrottled(await triggerBot(trigger, { a: 2 }), 1);
    });

    it('does not count requests with a wrong key', async () => {
      const trigger = await createTrigger(t, 'echo', 'wrong keys');
      const wrong = await Promise.all(Array.from({ length: 20 }, () => triggerBot(trigger, { a: 1 }, { key: 'whk_not-the-key' })));
      for (const r of wrong) expectError(r, 401);
      // The whole budget is still there.
      const right = await Promise.all(Array.from({ length: 10 }, (_, i) => triggerBot(trigger, { i })));
      expect(right.map((r) => r.status)).toEqual(Array(10).fill(200));
    });
  });

  describe('with perAccount 3 per minute', () => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, { database, options: { rateLimits: { perAccount: { limit: 3, ttlMs: 60_000 } } } });
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    it('counts every trigger of the account together: the 4th request gets 429', async () => {
      const a = await createTrigger(t, 'echo', 'account A');
      const b = await createTrigger(t, 'fail', 'account B');
      expect((await triggerBot(a, { n: 1 })).status).toBe(200);
      expect((await triggerBot(b, { n: 2 })).status).toBe(200);
      expect((await triggerBot(a, { n: 3 })).status).toBe(200);
      const res = await triggerBot(b, { n: 4 });
      expectError(res, 429);
      expect(res.body.message).toMatch(/account/);
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(await storedInvocations(t.store, b.id)).toHaveLength(1);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(997);
    });
  });
});

describeOnEveryAdapter('rate limits', ({ makeAdapter }) => {
  describe('on a clock the test moves (perAccount 3 per minute, failedKeyLimit 2 per minute)', () => {
    // The windows of a minute pass at once: the module reads a clock the test moves (the `clock` extra; the real-time case is above).
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: { rateLimits: { perAccount: { limit: 3, ttlMs: 60_000 } }, failedKeyLimit: { limit: 2, ttlMs: 60_000 } },
        extras: { clock },
      });
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    it("refuses the account's 4th request until the first one leaves its window, with Retry-After counting down", async () => {
      const a = await createTrigger(t, 'echo', 'moved clock A');
      const b = await createTrigger(t, 'echo', 'moved clock B');
      expect((await triggerBot(a, { n: 1 })).status).toBe(200);
      clock.advance(20_000);
      expect((await triggerBot(b, { n: 2 })).status).toBe(200);
      expect((await triggerBot(a, { n: 3 })).status).toBe(200);
      const refused = await triggerBot(b, { n: 4 });
      expectError(refused, 429);
      expect(refused.body.message).toBe(RATE_LIMITED('account'));
      expect(refused.headers.get('retry-after')).toBe('40');
      clock.advance(39_999);
      expect((await triggerBot(b, { n: 5 })).headers.get('retry-after')).toBe('1');
      clock.advance(1); // the request at 0 has left the window; the two at 20 s have not
      expect((await triggerBot(b, { n: 6 })).status).toBe(200);
      expectError(await triggerBot(a, { n: 7 }), 429);
      expect(await storedInvocations(t.store, a.id)).toHaveLength(2);
      expect(await storedInvocations(t.store, b.id)).toHaveLength(2);
    });

    it('answers an IP with too many wrong keys 429 for the rest of the minute, then takes its right key again', async () => {
      const trigger = await createTrigger(t, 'echo', 'moved clock keys');
      for (let i = 0; i < 2; i++) expectError(await triggerBot(trigger, {}, { key: 'whk_wrong' }), 401);
      clock.advance(59_000);
      const refused = await triggerBot(trigger, {});
      expectError(refused, 429);
      expect(refused.body.message).toBe(TOO_MANY_FAILED_KEYS);
      expect(refused.headers.get('retry-after')).toBe('1');
      clock.advance(1_000);
      expect((await triggerBot(trigger, {})).status).toBe(200);
    });
  });

  describe('with perTrigger 2 per 30 s and perAccount 3 per minute', () => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: { rateLimits: { perTrigger: { limit: 2, ttlMs: 30_000 }, perAccount: { limit: 3, ttlMs: 60_000 } } },
      });
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    async function expectRefusedBy(trigger: Parameters<typeof triggerBot>[0], scope: 'trigger' | 'account'): Promise<void> {
      const res = await triggerBot(trigger, {});
      expectError(res, 429);
      expect(res.body.message).toBe(RATE_LIMITED(scope));
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(scope === 'trigger' ? 25 : 55);
    }

    it('a request refused by one limit is not counted in the other', async () => {
      const a = await createTrigger(t, 'echo', 'one refusal A');
      const b = await createTrigger(t, 'echo', 'one refusal B');
      const c = await createTrigger(t, 'echo', 'one refusal C');
      expect((await triggerBot(a, { n: 1 })).status).toBe(200);
      expect((await triggerBot(a, { n: 2 })).status).toBe(200);
      for (let i = 0; i < 3; i++) await expectRefusedBy(a, 'trigger');
      // a's refusals were not counted in the account: it has room for exactly one more.
      expect((await triggerBot(b, { n: 3 })).status).toBe(200);
      for (let i = 0; i < 3; i++) await expectRefusedBy(c, 'account');
      // Nor were the account's refusals counted in c's own limit (2): had they been, the trigger would refuse first.
      await expectRefusedBy(c, 'account');
      expect(await storedInvocations(t.store, a.id)).toHaveLength(2);
      expect(await storedInvocations(t.store, c.id)).toHaveLength(0);
    });
  });

  describe('with failedKeyLimit 3 per minute, 4 requests per trigger per minute and historyRetentionDays 0', () => {
    const logs = new RecordingLogger();
    const shared = describeApp({ makeAdapter }, { ...TIGHT_LIMITS_APP, logger: logs }, { account: ACCOUNT });
    let t: WebhookTestApp;
    beforeAll(() => (t = shared.app));

    it('counts status requests toward the per-trigger limit, like sync', async () => {
      const echo = await createTrigger(t, 'echo', 'counted');
      const id = await startRun(echo, { a: 1 }); // 1
      expect((await syncInvocation(echo, id)).status).toBe(200); // 2
      expect((await getStatus(echo, id)).status).toBe(200); // 3
      expect((await getStatus(echo, id)).status).toBe(200); // 4
      for (const res of [
        await getStatus(echo, id),
        await cancelRun(echo, id),
        await syncInvocation(echo, id),
        await triggerBot(echo, { a: 2 }),
      ]) {
        expectError(res, 429);
        expect(res.body.message).toMatch(/trigger/);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      expect(invocationRows(t.dbFile, echo.id)).toHaveLength(1);
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
