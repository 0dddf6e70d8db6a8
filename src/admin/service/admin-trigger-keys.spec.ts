import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { BAD_KEY_EXPIRY, BAD_KEY_LABEL } from '../../errors/webhook-trigger.messages.js';
import { hashTriggerKey, matchTriggerKey } from '../../keys/trigger-keys.js';
import type { WebhookTriggerModuleOptions } from '../../options/webhook-trigger-options.interface.js';
import { type AdminServicesApp, startAdminServices } from '../../../test/helpers/admin-services.js';

const KEY_SECRET = 'a host secret of enough length';

/** What `promise` rejects with, to check the error's class and message. */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (e: unknown) => e,
  );

describe('AdminTriggerKeys', () => {
  let a: AdminServicesApp;
  const started: AdminServicesApp[] = [];

  async function setUp(options: WebhookTriggerModuleOptions = {}): Promise<void> {
    a = await startAdminServices(options);
    started.push(a);
  }

  beforeEach(() => setUp({ keySecret: KEY_SECRET }));
  afterEach(() => Promise.all(started.splice(0).map((app) => app.t.close())));

  /** Whether `key` opens the trigger now, as the guard judges it from the stored keys. */
  const opens = async (triggerId: string, key: string) =>
    matchTriggerKey(key, (await a.triggerRows.findActive(triggerId))!.keys, Date.now()) !== null;

  it('stores every key hashed and encrypted, never in clear, and lists them without a key', async () => {
    const created = await a.triggers.createTrigger('weather', { name: 'n' });
    const added = (await a.keys.createKey(created.id, { label: 'Second' }))!;
    const stored = (await a.triggerRows.findActive(created.id))!.keys;
    expect(stored.map((k) => k.keyHash)).toEqual([hashTriggerKey(created.key), hashTriggerKey(added.key)]);
    for (const k of stored) expect(k.keyCiphertext).not.toContain(k === stored[0] ? created.key.slice(4) : added.key.slice(4));
    const listed = await a.keys.listKeys(created.id);
    expect(listed?.map((k) => k.label)).toEqual(['Key 1', 'Second']);
    expect(JSON.stringify(listed)).not.toContain('whk_');
  });

  it('shows the newest usable key in the View (with keySecret), and none without it', async () => {
    const created = await a.triggers.createTrigger('weather', { name: 'n' });
    const added = (await a.keys.createKey(created.id, { label: 'Second' }))!;
    expect((await a.triggers.viewTrigger(created.id))?.key).toBe(added.key);
    await a.keys.revokeKey(created.id, added.id);
    expect((await a.triggers.viewTrigger(created.id))?.key).toBe(created.key);
    await setUp();
    const plain = await a.triggers.createTrigger('weather', { name: 'n' });
    expect((await a.triggers.viewTrigger(plain.id))?.key).toBeNull();
  });

  it('with keyRotationGraceMs 0, a rotation ends the other keys at once', async () => {
    await setUp({ keyRotationGraceMs: 0 });
    const created = await a.triggers.createTrigger('weather', { name: 'n' });
    const rotated = (await a.keys.rotateKey(created.id, (t) => a.triggers.view(t, undefined)))!;
    expect(rotated.graceEndsAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect(await opens(created.id, created.key)).toBe(false);
    expect(await opens(created.id, rotated.key)).toBe(true);
  });

  it('a rotation keeps the other keys until its grace end, and never lengthens an earlier expiry', async () => {
    const created = await a.triggers.createTrigger('weather', { name: 'n' });
    const soon = new Date(Date.now() + 60_000);
    const short = (await a.keys.createKey(created.id, { label: 'short', expiresAt: soon.toISOString() }))!;
    const rotated = (await a.keys.rotateKey(created.id, (t) => a.triggers.view(t, undefined)))!;
    const listed = (await a.keys.listKeys(created.id))!;
    expect(listed.map((k) => [k.label, k.expiresAt, k.inGrace])).toEqual([
      ['Key 1', rotated.graceEndsAt, true],
      ['short', soon, false],
      ['Key 3', null, false],
    ]);
    expect(await opens(created.id, created.key)).toBe(true);
    expect(await opens(created.id, short.key)).toBe(true);
  });

  it('refuses a bad label or expiry with the message, adding nothing; null for an unknown trigger', async () => {
    const created = await a.triggers.createTrigger('weather', { name: 'n' });
    for (const [input, message] of [
      [{ label: '' }, BAD_KEY_LABEL],
      [{ label: 'x'.repeat(201) }, BAD_KEY_LABEL],
      [{ label: 'ok', expiresAt: new Date(Date.now() - 1) }, BAD_KEY_EXPIRY],
      [{ label: 'ok', expiresAt: '2026-02-30' }, BAD_KEY_EXPIRY],
    ] as const) {
      const error = await failure(a.keys.createKey(created.id, input));
      expect(error).toBeInstanceOf(WebhookAdminInputError);
      expect((error as Error).message).toBe(message);
    }
    expect(await a.keys.listKeys(created.id)).toHaveLength(1);
    expect(await a.keys.createKey('trg_AAAAAAAAAAAAAAAA', { label: 'x' })).toBeNull();
    expect(await a.keys.listKeys('trg_AAAAAAAAAAAAAAAA')).toBeNull();
    expect(await a.keys.revokeKey(created.id, 'not-a-key-id')).toBe(false);
  });
});
