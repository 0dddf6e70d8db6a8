/** Credits: a run costs its bot's credits, charged once and atomically; no credits, no run. */
import { NOT_ENOUGH_CREDITS } from '../../src/errors/webhook-trigger.messages.js';
import { WebhookBot, WebhookBotHost, type BotOutput } from '../../src/index.js';
import { expectNothingStored, storedCredits, storedInvocations } from '../helpers/db.js';
import { type CapturedEvent } from '../helpers/events.js';
import { expectError, startRun, syncInvocation, triggerBot } from '../helpers/http.js';
import {
  createTrigger,
  describeOnEveryAdapterAndDatabase,
  type WebhookTestApp,
  ROOMY_APP,
  describeApp,
  startWebhookApp,
} from '../helpers/webhook-app.js';

/** A bot whose account has no credits row at all. */
@WebhookBot({ id: 'ghost', accountId: 'ghost-account' })
class GhostAccountBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [{ title: 'ran', message: 'yes' }];
  }
}

/** Costs nothing, owned by an account that does not exist. */
@WebhookBot({ id: 'free', accountId: 'ghost-account', credits: 0 })
class FreeBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [{ title: 'free', message: 'ran' }];
  }
}

/** Names no account: it belongs to `defaultAccountId`. */
@WebhookBot({ id: 'unowned' })
class UnownedBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [{ title: 'ran', message: 'yes' }];
  }
}

const ACCOUNT = 'acct';

describeOnEveryAdapterAndDatabase('credits', ({ makeAdapter, database }) => {
  describe('with a roomy configuration', () => {
    const shared = describeApp({ makeAdapter, database }, ROOMY_APP, { account: ACCOUNT, providers: [GhostAccountBot, FreeBot] });
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    beforeAll(() => ({ app: t, events } = shared));

    it('answers 402 when the account has fewer credits than the bot costs: nothing is stored and nothing runs', async () => {
      const trigger = await createTrigger(t, 'echo', 'broke');
      await t.admin.setCredits(ACCOUNT, 0);
      const res = await triggerBot(trigger, { a: 1 });
      expectError(res, 402);
      // The caller learns why, never the internal account id behind the trigger.
      expect(res.body.message).toBe(NOT_ENOUGH_CREDITS(1));
      expect(res.body.message).not.toMatch(/acct/);
      // A run accepted after the refusal goes through to its end; the refused one left nothing, not even later.
      const later = await createTrigger(t, 'echo', 'after the refusal');
      await t.admin.setCredits(ACCOUNT, 1);
      expect((await syncInvocation(later, await startRun(later, { b: 1 }))).body.success).toBe(true);
      await expectNothingStored(t, events, trigger, ACCOUNT, 0);
      expect((await t.admin.listInvocations('echo', { limit: 1000 })).filter((i) => i.triggerId === trigger.id)).toEqual([]);
      expect(await t.admin.getCredits(ACCOUNT)).toEqual({ id: ACCOUNT, credits: 0 });
    });

    it('answers 402 when the owning account does not exist', async () => {
      const trigger = await createTrigger(t, 'ghost');
      expect(await t.admin.getCredits('ghost-account')).toBeNull();
      expectError(await triggerBot(trigger, { a: 1 }), 402);
      expect(await storedInvocations(t.store, trigger.id)).toHaveLength(0);
      expect(await t.admin.listInvocations('ghost')).toEqual([]);
      expect(await t.admin.getCredits('ghost-account')).toBeNull();
    });

    it('runs a bot that costs 0 credits without touching any balance', async () => {
      const trigger = await createTrigger(t, 'free');
      const id = await startRun(trigger, {});
      expect((await syncInvocation(trigger, id)).body).toEqual({ success: true, outputs: [{ title: 'free', message: 'ran' }] });
      expect(await t.admin.getCredits('ghost-account')).toBeNull();
    });

    it('debits atomically: 5 credits and 20 concurrent triggers make exactly 5 runs', async () => {
      const trigger = await createTrigger(t, 'echo', 'race');
      await t.admin.setCredits(ACCOUNT, 5);
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => triggerBot(trigger, { i })));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 200)).toHaveLength(5);
      expect(statuses.filter((s) => s === 402)).toHaveLength(15);
      for (const r of results.filter((r) => r.status === 402)) expectError(r, 402);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(0);
      const rows = await storedInvocations(t.store, trigger.id);
      expect(rows).toHaveLength(5);
      expect(new Set(rows.map((r) => r.id))).toEqual(new Set(results.filter((r) => r.status === 200).map((r) => r.body.invocation.id)));
    });
  });

  describe("when a bot's account changed since its trigger was created", () => {
    it("charges the bot's account of now (defaultAccountId set later), and counts its limits there", async () => {
      // A new user's first start: the bot names no account, so it is "default" (never opened); they make a trigger.
      const before = await startWebhookApp(makeAdapter, { database, providers: [UnownedBot], onlyProviders: true });
      try {
        const created = await before.admin.createTrigger('unowned', { name: 'first' });
        // They do what the startup warning says: give the bot a funded account. (A node with the new settings.)
        const after = await startWebhookApp(makeAdapter, {
          store: before.store,
          providers: [UnownedBot],
          onlyProviders: true,
          options: {
            defaultAccountId: 'acme',
            accounts: { acme: { credits: 10 } },
            rateLimits: { perAccount: { limit: 1, ttlMs: 60_000 } },
          },
        });
        try {
          const trigger = { id: created.id, key: created.key, botId: 'unowned', url: `${after.baseUrl}/webhooks/${created.id}/trigger` };
          const res = await triggerBot(trigger, { a: '1' });
          expect(res.status).toBe(200);
          expect(await storedCredits(after.store, 'acme')).toBe(9);
          expect(await storedCredits(after.store, 'default')).toBeNull();
          expect(await storedInvocations(after.store, created.id)).toHaveLength(1);
          // The account's limit (1 a minute) is counted on acme: the next trigger is refused by it.
          const again = await triggerBot(trigger, { a: '2' });
          expectError(again, 429);
          expect(again.body.message).toMatch(/account/);
        } finally {
          await after.close();
        }
      } finally {
        await before.close();
      }
    });
  });
});
