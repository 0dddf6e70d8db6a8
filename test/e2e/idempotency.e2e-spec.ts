/** Idempotency-Key: a repeated request gets the first run (one row, one charge, one run) until the key expires. */
import { WEBHOOK_EVENTS } from '../../src/index.js';
import { IDEMPOTENCY_KEY_REUSED } from '../../src/errors/webhook-trigger.messages.js';
import { creditsRow, expectNothingStored, invocationRows, storedCredits, storedInvocations } from '../helpers/db.js';
import { type CapturedEvent } from '../helpers/events.js';
import { expectError, sleep, startRun, syncInvocation, triggerBot, until } from '../helpers/http.js';
import {
  createTrigger,
  describeOnEveryAdapter,
  describeOnEveryAdapterAndDatabase,
  type WebhookTestApp,
  LIFECYCLE_APP,
  ROOMY_APP,
  describeApp,
} from '../helpers/webhook-app.js';

const ACCOUNT = 'acct';

describeOnEveryAdapterAndDatabase('idempotency', ({ makeAdapter, database }) => {
  describe('with a roomy configuration', () => {
    const shared = describeApp({ makeAdapter, database }, ROOMY_APP, { account: ACCOUNT });
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    beforeAll(() => ({ app: t, events } = shared));

    it('returns the first invocation for a repeated key on the same trigger: one charge, one row, one run', async () => {
      const trigger = await createTrigger(t, 'echo', 'idempotent');
      const first = await triggerBot(trigger, { n: 1 }, { headers: { 'Idempotency-Key': 'order-42' } });
      const second = await triggerBot(trigger, { n: 1 }, { headers: { 'idempotency-key': 'order-42' } });
      expect(first.status).toBe(200);
      expect(second.status).toBe(200);
      expect(second.body).toEqual(first.body);
      // The same key with another body is a different request: refused, nothing charged.
      const other = await triggerBot(trigger, { n: 2 }, { headers: { 'Idempotency-Key': 'order-42' } });
      expectError(other, 422);
      expect(other.body.message).toMatch(/different request body/);
      const id = first.body.invocation.id;
      expect((await syncInvocation(trigger, id)).body).toEqual({ success: true, outputs: [{ title: 'n', message: '1' }] });
      expect(await storedCredits(t.store, ACCOUNT)).toBe(999);
      expect(await storedInvocations(t.store, trigger.id)).toHaveLength(1);
      await until(() => events.some((e) => e.payload.invocationId === id && e.name === WEBHOOK_EVENTS.succeeded));
      expect(events.filter((e) => e.payload.invocationId === id && e.name === WEBHOOK_EVENTS.started)).toHaveLength(1);
    });

    it('keeps the same key on different triggers independent', async () => {
      const a = await createTrigger(t, 'echo', 'idem A');
      const b = await createTrigger(t, 'echo', 'idem B');
      const idA = await startRun(a, { on: 'a' }, { headers: { 'Idempotency-Key': 'same' } });
      const idB = await startRun(b, { on: 'b' }, { headers: { 'Idempotency-Key': 'same' } });
      expect(idB).not.toBe(idA);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(998);
      expect((await syncInvocation(b, idB)).body.outputs).toEqual([{ title: 'on', message: 'b' }]);
    });

    it('gives 10 concurrent requests with one key one invocation and one charge', async () => {
      const trigger = await createTrigger(t, 'echo', 'idem race');
      const results = await Promise.all(
        Array.from({ length: 10 }, () => triggerBot(trigger, { i: 1 }, { headers: { 'Idempotency-Key': 'burst' } })),
      );
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect(new Set(results.map((r) => r.body.invocation.id)).size).toBe(1);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(999);
      expect(await storedInvocations(t.store, trigger.id)).toHaveLength(1);
    });

    it('does not remember a key whose request was refused for lack of credits', async () => {
      const trigger = await createTrigger(t, 'echo', 'idem broke');
      await t.admin.setCredits(ACCOUNT, 0);
      expectError(await triggerBot(trigger, { try: 1 }, { headers: { 'Idempotency-Key': 'retry-me' } }), 402);
      await t.admin.setCredits(ACCOUNT, 1);
      const id = await startRun(trigger, { try: 2 }, { headers: { 'Idempotency-Key': 'retry-me' } });
      expect((await syncInvocation(trigger, id)).body.outputs).toEqual([{ title: 'try', message: '2' }]);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(0);
    });

    it('answers 400 for an unusable Idempotency-Key; nothing is stored or charged', async () => {
      const trigger = await createTrigger(t, 'echo', 'idem bad');
      const res = await triggerBot(trigger, { a: 1 }, { headers: { 'Idempotency-Key': 'k'.repeat(256) } });
      expectError(res, 400);
      expect(res.body.message).toMatch(/Idempotency-Key/);
      await expectNothingStored(t, events, trigger, ACCOUNT, 1000);
    });
  });
});

describeOnEveryAdapter('idempotency', ({ makeAdapter }) => {
  describe('with the lifecycle app (64 run slots, a 1 s idempotency TTL)', () => {
    const shared = describeApp({ makeAdapter }, LIFECYCLE_APP, { account: ACCOUNT });
    let t: WebhookTestApp;
    beforeAll(() => (t = shared.app));

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
      expect((await syncInvocation(echo, again.body.invocation.id)).body).toEqual({
        success: true,
        outputs: [{ title: 'n', message: '1' }],
      });
      // The new run now holds the key: a repeat returns it.
      expect((await triggerBot(echo, { n: 1 }, { headers: { 'Idempotency-Key': 'order-7' } })).body.invocation.id).toBe(
        again.body.invocation.id,
      );
    });
  });
});
