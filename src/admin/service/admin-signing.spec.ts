import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { SigningSecretStore } from '../../persistence/signing-secret-store.js';
import { type AdminServicesApp, startAdminServices } from '../../../test/helpers/admin-services.js';
import { AdminSigning } from './admin-signing.js';

describe('AdminSigning', () => {
  let app: AdminServicesApp | undefined;
  afterEach(async () => {
    await app?.t.close();
    app = undefined;
  });

  /** A signed request (the standardwebhooks package as the sender) to the trigger, without X-Key. */
  async function sendSigned(triggerId: string, secret: string): Promise<number> {
    const body = '{"city":"Oslo"}';
    const msgId = `msg_${randomBytes(8).toString('hex')}`;
    const now = new Date();
    const res = await fetch(`${app!.t.baseUrl}/webhooks/${triggerId}/trigger`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': msgId,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(msgId, now, body),
      },
      body,
    });
    await res.text();
    return res.status;
  }

  it.each([
    ['with keySecret: stored AES-256-GCM encrypted', 'a host secret, long enough to count', false],
    ['without keySecret: stored as it is', undefined, true],
  ])('%s; the secret is shown in the rotation only, and verifies requests either way', async (_name, keySecret, plain) => {
    app = await startAdminServices({ keySecret, accounts: { acme: { credits: 100 } } });
    const signing = app.t.app.get(AdminSigning);
    const { id } = await app.triggers.createTrigger('weather', { name: 'signed' });
    expect(await signing.setRequestSigning(id, 'instead-of-key')).toEqual({ mode: 'instead-of-key', secrets: [] });
    const rotated = (await signing.rotateSigningSecret(id))!;
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const [row] = await app.t.app.get(SigningSecretStore).listSecrets(id, 10);
    expect(row.secret === rotated.secret).toBe(plain);
    if (!plain) expect(row.secret).not.toContain(rotated.secret.slice(6));
    expect(JSON.stringify(await signing.getRequestSigning(id))).not.toContain('whsec_');
    expect(await sendSigned(id, rotated.secret)).toBe(200);
  });

  it('refuses a mode that is not one of the three, and changes nothing', async () => {
    app = await startAdminServices();
    const signing = app.t.app.get(AdminSigning);
    const { id } = await app.triggers.createTrigger('weather', { name: 'n' });
    for (const mode of ['on', '', null, 1, ['with-key']]) {
      await expect(signing.setRequestSigning(id, mode)).rejects.toThrow(WebhookAdminInputError);
    }
    expect((await signing.getRequestSigning(id))?.mode).toBe('off');
  });

  it('answers null for impossible or unknown ids, and for a secret of another trigger', async () => {
    app = await startAdminServices();
    const signing = app.t.app.get(AdminSigning);
    const a = await app.triggers.createTrigger('weather', { name: 'a' });
    const b = await app.triggers.createTrigger('weather', { name: 'b' });
    const { id: secretOfA } = (await signing.rotateSigningSecret(a.id))!;
    expect(await signing.getRequestSigning('trg_\u0000')).toBeNull();
    expect(await signing.setRequestSigning('trg_AAAAAAAAAAAAAAAA', 'off')).toBeNull();
    expect(await signing.rotateSigningSecret('not a trigger')).toBeNull();
    expect(await signing.revokeSigningSecret(b.id, secretOfA)).toBeNull();
    expect(await signing.revokeSigningSecret(a.id, 'sgs_x')).toBeNull();
    expect((await signing.revokeSigningSecret(a.id, secretOfA))?.secrets[0].status).toBe('revoked');
  });
});
