import { WebhookAdminInputError } from '../errors/webhook-trigger.errors.js';
import { BAD_CREDITS, BAD_TRIGGER_NAME, TRIGGER_TYPE_UNSUPPORTED, UNKNOWN_BOT } from '../errors/webhook-trigger.messages.js';
import { hashTriggerKey, verifyTriggerKey } from '../keys/trigger-keys.js';
import type { WebhookTriggerModuleOptions } from '../options/webhook-trigger-options.interface.js';
import { createWebhookFakes, type WebhookFakes } from '../../test/fakes/webhook-fakes.js';
import { WebhookTriggersAdmin } from './webhook-triggers.admin.js';

const KEY_SECRET = 'a host secret of enough length';

describe('WebhookTriggersAdmin', () => {
  let f: WebhookFakes;
  let admin: WebhookTriggersAdmin;

  function setUp(options: WebhookTriggerModuleOptions = {}): void {
    f = createWebhookFakes({ publicBaseUrl: 'https://api.example.com', ...options });
    f.addBot({ id: 'weather', name: 'Weather', credits: 3, accountId: 'acme' });
    admin = new WebhookTriggersAdmin(f.registry, f.triggers, f.invocations, f.accounts, f.service, f.bus, f.options);
  }

  /** What `promise` rejects with, to check the error's class and message. */
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => 'resolved',
      (e: unknown) => e,
    );

  beforeEach(() => setUp());

  it('lists the registered bots', () => {
    expect(admin.listBots()).toEqual([{ id: 'weather', name: 'Weather', accountId: 'acme', credits: 3 }]);
  });

  describe('createTrigger', () => {
    it("creates a trigger for the bot's account with a trimmed name and shows its key once", async () => {
      const created = await admin.createTrigger('weather', { name: '  Morning report  ' });
      expect(created).toEqual({
        id: expect.stringMatching(/^trg_[A-Za-z0-9_-]{16}$/),
        name: 'Morning report',
        type: 'webhook',
        botId: 'weather',
        accountId: 'acme',
        url: `https://api.example.com/webhooks/${created.id}/trigger`,
        createdAt: expect.any(Date),
        key: expect.stringMatching(/^whk_[A-Za-z0-9_-]{43}$/),
      });
      const stored = await f.triggers.findActive(created.id);
      expect(stored).toMatchObject({
        name: 'Morning report',
        accountId: 'acme',
        keyHash: hashTriggerKey(created.key!),
        keyCiphertext: null,
      });
      const { key: _key, ...view } = created;
      expect(await admin.listTriggers('weather')).toEqual([{ ...view, lastUsedAt: null }]);
    });

    it('accepts names of 1 to 200 characters after trimming, and refuses others', async () => {
      expect((await admin.createTrigger('weather', { name: 'x' })).name).toBe('x');
      expect((await admin.createTrigger('weather', { name: ` ${'y'.repeat(200)} ` })).name).toHaveLength(200);
      for (const name of ['', '   ', 'z'.repeat(201), 42 as unknown as string, undefined as unknown as string]) {
        const error = await failure(admin.createTrigger('weather', { name }));
        expect(error).toBeInstanceOf(WebhookAdminInputError);
        expect((error as Error).message).toBe(BAD_TRIGGER_NAME);
      }
      expect(await admin.listTriggers('weather')).toHaveLength(2);
    });

    it("accepts only the 'webhook' type", async () => {
      expect((await admin.createTrigger('weather', { name: 'n', type: 'webhook' })).type).toBe('webhook');
      const error = await failure(admin.createTrigger('weather', { name: 'n', type: 'email' }));
      expect(error).toBeInstanceOf(WebhookAdminInputError);
      expect((error as Error).message).toBe(TRIGGER_TYPE_UNSUPPORTED('email'));
      expect(await admin.listTriggers('weather')).toHaveLength(1);
    });

    it('refuses a bot that is not registered', async () => {
      const error = await failure(admin.createTrigger('ghost', { name: 'n' }));
      expect(error).toBeInstanceOf(WebhookAdminInputError);
      expect((error as Error).message).toBe(UNKNOWN_BOT('ghost'));
      expect(await admin.listTriggers('ghost')).toEqual([]);
    });
  });

  describe('viewTrigger', () => {
    it('shows the key again when the module has a keySecret (stored encrypted, never in clear)', async () => {
      setUp({ keySecret: KEY_SECRET });
      const created = await admin.createTrigger('weather', { name: 'n' });
      const stored = (await f.triggers.findActive(created.id))!;
      expect(stored.keyCiphertext).toEqual(expect.any(String));
      expect(stored.keyCiphertext).not.toContain(created.key!.slice(4));
      expect(await admin.viewTrigger(created.id)).toEqual(created);
    });

    it('shows no key without a keySecret', async () => {
      const created = await admin.createTrigger('weather', { name: 'n' });
      expect(await admin.viewTrigger(created.id)).toEqual({ ...created, key: null });
    });

    it('answers null for an unknown or deleted trigger', async () => {
      const created = await admin.createTrigger('weather', { name: 'n' });
      expect(await admin.viewTrigger('trg_AAAAAAAAAAAAAAAA')).toBeNull();
      expect(await admin.deleteTrigger(created.id)).toBe(true);
      expect(await admin.viewTrigger(created.id)).toBeNull();
    });
  });

  describe('rotateKey', () => {
    it('replaces the stored key: the old one stops verifying, the new one works and is shown', async () => {
      setUp({ keySecret: KEY_SECRET });
      const created = await admin.createTrigger('weather', { name: 'n' });
      const rotated = (await admin.rotateKey(created.id))!;
      expect(rotated.key).toMatch(/^whk_/);
      expect(rotated.key).not.toBe(created.key);
      expect(rotated).toEqual({ ...created, key: rotated.key });
      const stored = (await f.triggers.findActive(created.id))!;
      expect(verifyTriggerKey(created.key!, stored.keyHash)).toBe(false);
      expect(verifyTriggerKey(rotated.key!, stored.keyHash)).toBe(true);
      expect((await admin.viewTrigger(created.id))?.key).toBe(rotated.key);
    });

    it('answers null for an unknown or deleted trigger', async () => {
      const created = await admin.createTrigger('weather', { name: 'n' });
      await admin.deleteTrigger(created.id);
      expect(await admin.rotateKey(created.id)).toBeNull();
      expect(await admin.rotateKey('trg_AAAAAAAAAAAAAAAA')).toBeNull();
    });
  });

  describe('deleteTrigger', () => {
    it('deletes once; the trigger leaves the list and its runs stay in history', async () => {
      const kept = await admin.createTrigger('weather', { name: 'kept' });
      const gone = await admin.createTrigger('weather', { name: 'gone' });
      await f.invocations.insert({
        id: 'inv_AAAAAAAAAAAAAAAAAAAAAA',
        triggerId: gone.id,
        botId: 'weather',
        accountId: 'acme',
        inputs: {},
        credits: 3,
        idempotencyKey: null,
        requestHash: null,
        createdAt: new Date(),
      });
      expect(await admin.deleteTrigger(gone.id)).toBe(true);
      expect(await admin.deleteTrigger(gone.id)).toBe(false);
      expect((await admin.listTriggers('weather')).map((t) => t.id)).toEqual([kept.id]);
      expect((await admin.listInvocations('weather')).map((i) => i.triggerId)).toEqual([gone.id]);
    });
  });

  describe('listInvocations', () => {
    it("lists a bot's runs newest first with their duration, up to the limit", async () => {
      const t0 = Date.UTC(2026, 0, 1);
      const base = { triggerId: 'trg_AAAAAAAAAAAAAAAA', botId: 'weather', accountId: 'acme', inputs: { secret: 'input' }, credits: 3 };
      const none = { idempotencyKey: null, requestHash: null };
      await f.invocations.insert({ id: 'inv_old', ...base, ...none, createdAt: new Date(t0) });
      await f.invocations.insert({ id: 'inv_new', ...base, ...none, createdAt: new Date(t0 + 1000) });
      await f.invocations.markRunning('inv_old', new Date(t0 + 100), 'w', new Date(t0 + 60_000));
      await f.invocations.transition('inv_old', 'running', 'succeeded', {
        finishedAt: new Date(t0 + 350),
        outputs: [{ title: 't', message: 'm' }],
        error: null,
      });
      const list = await admin.listInvocations('weather');
      expect(list).toEqual([
        {
          id: 'inv_new',
          triggerId: base.triggerId,
          botId: 'weather',
          status: 'queued',
          credits: 3,
          createdAt: new Date(t0 + 1000),
          startedAt: null,
          finishedAt: null,
          durationMs: null,
          outputs: null,
          outputsTruncated: false,
          error: null,
          triggerName: null,
          idempotencyKey: null,
        },
        {
          id: 'inv_old',
          triggerId: base.triggerId,
          botId: 'weather',
          status: 'succeeded',
          credits: 3,
          createdAt: new Date(t0),
          startedAt: new Date(t0 + 100),
          finishedAt: new Date(t0 + 350),
          durationMs: 250,
          outputs: [{ title: 't', message: 'm' }],
          outputsTruncated: false,
          error: null,
          triggerName: null,
          idempotencyKey: null,
        },
      ]);
      expect((await admin.listInvocations('weather', 1)).map((i) => i.id)).toEqual(['inv_new']);
      expect((await admin.listInvocations('weather', 0)).map((i) => i.id)).toEqual(['inv_new']); // at least one
      expect(await admin.listInvocations('other')).toEqual([]);
    });
  });

  describe('credits', () => {
    it('reads and sets an account balance; an unknown account has none', async () => {
      expect(await admin.getCredits('acme')).toBeNull();
      expect(await admin.setCredits('acme', 25)).toEqual({ id: 'acme', credits: 25 });
      expect(await admin.getCredits('acme')).toEqual({ id: 'acme', credits: 25 });
      expect(await admin.setCredits('acme', 0)).toEqual({ id: 'acme', credits: 0 });
      expect(await f.accounts.getBalance('acme')).toBe(0);
    });

    it('refuses a balance that is not a whole number ≥ 0, and keeps the old one', async () => {
      await admin.setCredits('acme', 7);
      for (const credits of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '5' as unknown as number]) {
        const error = await failure(admin.setCredits('acme', credits));
        expect(error).toBeInstanceOf(WebhookAdminInputError);
        expect((error as Error).message).toBe(BAD_CREDITS);
      }
      expect(await admin.getCredits('acme')).toEqual({ id: 'acme', credits: 7 });
    });
  });
});
