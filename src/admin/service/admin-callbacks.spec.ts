import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { BAD_ADMIN_FIELD } from '../../errors/webhook-trigger.messages.js';
import { CALLBACK_EVENTS } from '../../persistence/records.js';
import { type AdminServicesApp, startAdminServices } from '../../../test/helpers/admin-services.js';
import { callbackEvents } from './admin-callbacks.js';

const RECEIVER = 'https://receiver.example.com/hook';

describe('callbackEvents', () => {
  it('always includes invocation.completed, and lists the events in one order whatever the order given', () => {
    expect(callbackEvents(undefined)).toEqual(['invocation.completed']);
    expect(callbackEvents(null)).toEqual(['invocation.completed']);
    expect(callbackEvents([])).toEqual(['invocation.completed']);
    expect(callbackEvents(['invocation.output', 'invocation.started', 'invocation.output'])).toEqual([
      'invocation.started',
      'invocation.output',
      'invocation.completed',
    ]);
  });

  it.each([[['invocation.finished']], [['invocation.started', 42]], ['invocation.started'], [{}]])(
    'refuses %j, naming the events there are',
    (given) => {
      expect(() => callbackEvents(given)).toThrow(WebhookAdminInputError);
      expect(() => callbackEvents(given)).toThrow(BAD_ADMIN_FIELD('events', `a list of ${CALLBACK_EVENTS.join(', ')}`));
    },
  );
});

describe('AdminCallbacks', () => {
  const started: AdminServicesApp[] = [];
  let dir: string;
  let dbFile: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'admin-callbacks-'));
    dbFile = join(dir, 'webhooks.sqlite');
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((app) => app.t.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(keySecret?: string): Promise<AdminServicesApp> {
    const app = await startAdminServices({ keySecret }, dbFile);
    started.push(app);
    return app;
  }

  it('keeps the secret when the URL or events change, and shows it again only with a keySecret', async () => {
    const a = await start('the first host secret, long enough');
    const { id } = await a.triggers.createTrigger('weather', { name: 'n' });
    const set = (await a.callbacks.setCallback(id, { url: RECEIVER }))!;
    expect(set.secret).toMatch(/^whsec_/);
    const changed = await a.callbacks.setCallback(id, { url: `${RECEIVER}/2`, events: ['invocation.started'] });
    expect(changed).toEqual({ ...set, url: `${RECEIVER}/2`, events: ['invocation.started', 'invocation.completed'] });
    expect(await a.callbacks.getCallback(id)).toEqual(changed);
  });

  it('replaces a secret sealed with another keySecret when the callback is set again: nothing could sign with it', async () => {
    const first = await start('the first host secret, long enough');
    const { id } = await first.triggers.createTrigger('weather', { name: 'n' });
    const before = (await first.callbacks.setCallback(id, { url: RECEIVER }))!;
    await first.t.close();
    started.splice(0);

    const second = await start('another host secret, long enough');
    expect((await second.callbacks.getCallback(id))?.secret).toBeNull(); // cannot be opened any more
    const after = (await second.callbacks.setCallback(id, { url: RECEIVER }))!;
    expect(after.secret).toMatch(/^whsec_/);
    expect(after.secret).not.toBe(before.secret);
    expect((await second.callbacks.getCallback(id))?.secret).toBe(after.secret);
  });

  it('answers null, false or [] for impossible ids, without reading anything', async () => {
    const a = await start();
    expect(await a.callbacks.getCallback('trg_\u0000')).toBeNull();
    expect(await a.callbacks.setCallback('not a trigger', { url: RECEIVER })).toBeNull();
    expect(await a.callbacks.rotateCallbackSecret('trg_AAAAAAAAAAAAAAAA')).toBeNull();
    expect(await a.callbacks.deleteCallback('trg_AAAAAAAAAAAAAAAA')).toBe(false);
    expect(await a.callbacks.listDeliveries('trg_AAAAAAAAAAAAAAAA')).toBeNull();
    expect(await a.callbacks.listInvocationDeliveries('inv_\u0000')).toEqual([]);
    expect(await a.callbacks.redeliver('dlv_x')).toBe(false);
    expect(await a.callbacks.redeliver(42 as unknown as string)).toBe(false);
  });
});
