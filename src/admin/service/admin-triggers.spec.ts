import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { BAD_TRIGGER_NAME, TRIGGER_TYPE_UNSUPPORTED, UNKNOWN_BOT } from '../../errors/webhook-trigger.messages.js';
import { hashTriggerKey } from '../../keys/trigger-keys.js';
import type { WebhookTriggerModuleOptions } from '../../options/webhook-trigger-options.interface.js';
import { type AdminServicesApp, startAdminServices } from '../../../test/helpers/admin-services.js';
import { ManualClock } from '../../../test/fakes/manual-clock.js';

const KEY_SECRET = 'a host secret of enough length';
const PUBLIC = 'https://api.example.com';

/** What `promise` rejects with, to check the error's class and message. */
/** A stored run of the weather bot (3 credits, account acme) through `triggerId`. */
const weatherRun = (triggerId: string, id: string, createdAt: Date) => ({
  id,
  triggerId,
  botId: 'weather',
  accountId: 'acme',
  inputs: {},
  credits: 3,
  idempotencyKey: null,
  requestHash: null,
  createdAt,
});

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (e: unknown) => e,
  );

describe('AdminTriggers', () => {
  let a: AdminServicesApp;
  const started: AdminServicesApp[] = [];

  async function setUp(options: WebhookTriggerModuleOptions = {}): Promise<void> {
    a = await startAdminServices({ publicBaseUrl: PUBLIC, ...options });
    started.push(a);
  }

  beforeEach(() => setUp());
  afterEach(() => Promise.all(started.splice(0).map((app) => app.t.close())));

  it('lists the registered bots', () => {
    expect(a.triggers.listBots()).toEqual([{ id: 'weather', name: 'Weather', accountId: 'acme', credits: 3 }]);
  });

  it("summarizes a bot: its account's balance (null until opened), its triggers and its runs of the last 24 hours", async () => {
    const summary = { id: 'weather', name: 'Weather', accountId: 'acme', credits: 3 };
    expect(await a.triggers.getBotSummary('weather')).toEqual({ ...summary, accountCredits: null, triggers: 0, runsLast24h: 0 });
    const { id: triggerId } = await a.triggers.createTrigger('weather', { name: 'n' });
    await a.credits.setCredits('acme', 10);
    await a.invocationRows.insert(weatherRun(triggerId, 'inv_recent', new Date(Date.now() - 60_000)));
    await a.invocationRows.insert(weatherRun(triggerId, 'inv_yesterday', new Date(Date.now() - 25 * 3600_000)));
    const expected = { ...summary, accountCredits: 10, triggers: 1, runsLast24h: 1 };
    expect(await a.triggers.getBotSummary('weather')).toEqual(expected);
    expect(await a.triggers.listBotSummaries()).toEqual([expected]);
    expect(await a.triggers.getBotSummary('ghost')).toBeNull();
  });

  it("dates a new trigger and counts a bot's last 24 hours on the module's clock", async () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    const app = await startAdminServices({ publicBaseUrl: PUBLIC }, undefined, { clock: new ManualClock(now) });
    started.push(app);
    const created = await app.triggers.createTrigger('weather', { name: 'n' });
    expect(created.createdAt).toEqual(new Date(now));
    await app.invocationRows.insert(weatherRun(created.id, 'inv_clock_recent', new Date(now - 60_000)));
    await app.invocationRows.insert(weatherRun(created.id, 'inv_clock_old', new Date(now - 25 * 3600_000)));
    expect((await app.triggers.getBotSummary('weather'))?.runsLast24h).toBe(1);
  });

  describe('createTrigger', () => {
    it("creates a trigger for the bot's account with a trimmed name and shows its key once", async () => {
      const created = await a.triggers.createTrigger('weather', { name: '  Morning report  ' });
      expect(created).toEqual({
        id: expect.stringMatching(/^trg_[A-Za-z0-9_-]{16}$/),
        name: 'Morning report',
        allowedIps: [],
        type: 'webhook',
        botId: 'weather',
        accountId: 'acme',
        url: `${PUBLIC}/webhooks/${created.id}/trigger`,
        createdAt: expect.any(Date),
        key: expect.stringMatching(/^whk_[A-Za-z0-9_-]{43}$/),
      });
      const stored = await a.triggerRows.findActive(created.id);
      expect(stored).toMatchObject({
        name: 'Morning report',
        accountId: 'acme',
        keys: [expect.objectContaining({ label: 'Key 1', keyHash: hashTriggerKey(created.key), keyCiphertext: null, expiresAt: null })],
      });
      const { key: _key, ...view } = created;
      expect(await a.triggers.listTriggers('weather')).toEqual([{ ...view, lastUsedAt: null }]);
    });

    it('accepts names of 1 to 200 characters after trimming, and refuses others', async () => {
      expect((await a.triggers.createTrigger('weather', { name: 'x' })).name).toBe('x');
      expect((await a.triggers.createTrigger('weather', { name: ` ${'y'.repeat(200)} ` })).name).toHaveLength(200);
      for (const name of ['', '   ', 'z'.repeat(201), 42 as unknown as string, undefined as unknown as string]) {
        const error = await failure(a.triggers.createTrigger('weather', { name }));
        expect(error).toBeInstanceOf(WebhookAdminInputError);
        expect((error as Error).message).toBe(BAD_TRIGGER_NAME);
      }
      expect(await a.triggers.listTriggers('weather')).toHaveLength(2);
    });

    it("accepts only the 'webhook' type", async () => {
      expect((await a.triggers.createTrigger('weather', { name: 'n', type: 'webhook' })).type).toBe('webhook');
      const error = await failure(a.triggers.createTrigger('weather', { name: 'n', type: 'email' }));
      expect(error).toBeInstanceOf(WebhookAdminInputError);
      expect((error as Error).message).toBe(TRIGGER_TYPE_UNSUPPORTED('email'));
      expect(await a.triggers.listTriggers('weather')).toHaveLength(1);
    });

    it('refuses a bot that is not registered', async () => {
      const error = await failure(a.triggers.createTrigger('ghost', { name: 'n' }));
      expect(error).toBeInstanceOf(WebhookAdminInputError);
      expect((error as Error).message).toBe(UNKNOWN_BOT('ghost'));
      expect(await a.triggers.listTriggers('ghost')).toEqual([]);
    });
  });

  describe('trigger URLs', () => {
    it("builds every trigger view's URL on the viewer's origin when there is no publicBaseUrl", async () => {
      await setUp({ publicBaseUrl: undefined, keySecret: KEY_SECRET });
      const origin = 'https://admin.example.org';
      const url = (id: string) => `${origin}/webhooks/${id}/trigger`;
      const created = await a.triggers.createTrigger('weather', { name: 'n' }, origin);
      expect(created.url).toBe(url(created.id));
      expect((await a.triggers.listTriggers('weather', origin)).map((t) => t.url)).toEqual([url(created.id)]);
      expect((await a.triggers.viewTrigger(created.id, origin))?.url).toBe(url(created.id));
      expect((await a.keys.rotateKey(created.id, (t) => a.triggers.view(t, origin)))?.url).toBe(url(created.id));
      // No origin: the app's own address (it listens on a port of its own here).
      const port = new URL(a.t.baseUrl).port;
      expect((await a.triggers.viewTrigger(created.id))?.url).toBe(`http://localhost:${port}/webhooks/${created.id}/trigger`);
    });

    it('keeps publicBaseUrl over any origin', async () => {
      const created = await a.triggers.createTrigger('weather', { name: 'n' }, 'https://admin.example.org');
      expect(created.url).toBe(`${PUBLIC}/webhooks/${created.id}/trigger`);
      expect((await a.triggers.listTriggers('weather', 'https://admin.example.org'))[0].url).toBe(created.url);
    });
  });

  describe('viewTrigger', () => {
    it('shows the key again when the module has a keySecret (stored encrypted, never in clear)', async () => {
      await setUp({ keySecret: KEY_SECRET });
      const created = await a.triggers.createTrigger('weather', { name: 'n' });
      const stored = (await a.triggerRows.findActive(created.id))!;
      expect(stored.keys[0].keyCiphertext).toEqual(expect.any(String));
      expect(stored.keys[0].keyCiphertext).not.toContain(created.key.slice(4));
      expect(await a.triggers.viewTrigger(created.id)).toEqual(created);
    });

    it('shows no key without a keySecret', async () => {
      const created = await a.triggers.createTrigger('weather', { name: 'n' });
      expect(await a.triggers.viewTrigger(created.id)).toEqual({ ...created, key: null });
    });

    it('answers null for an unknown or deleted trigger', async () => {
      const created = await a.triggers.createTrigger('weather', { name: 'n' });
      expect(await a.triggers.viewTrigger('trg_AAAAAAAAAAAAAAAA')).toBeNull();
      expect(await a.triggers.deleteTrigger(created.id)).toBe(true);
      expect(await a.triggers.viewTrigger(created.id)).toBeNull();
    });
  });

  describe('deleteTrigger', () => {
    it('deletes once; the trigger leaves the list, its callback goes with it, and its runs stay in history', async () => {
      const kept = await a.triggers.createTrigger('weather', { name: 'kept' });
      const gone = await a.triggers.createTrigger('weather', { name: 'gone' });
      await a.callbacks.setCallback(gone.id, { url: 'https://receiver.example.com/hook' });
      await a.invocationRows.insert(weatherRun(gone.id, 'inv_AAAAAAAAAAAAAAAAAAAAAA', new Date()));
      expect(await a.triggers.deleteTrigger(gone.id)).toBe(true);
      expect(await a.triggers.deleteTrigger(gone.id)).toBe(false);
      expect((await a.triggers.listTriggers('weather')).map((t) => t.id)).toEqual([kept.id]);
      expect(await a.callbacks.deleteCallback(gone.id)).toBe(false); // already gone with its trigger
      expect((await a.history.listInvocations('weather')).map((i) => i.triggerId)).toEqual([gone.id]);
    });
  });
});
