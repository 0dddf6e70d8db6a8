import type { SigningSecretRecord, TriggerRecord } from '../../src/persistence/records.js';
import type { WebhookStorage } from '../../src/persistence/webhook-storage.js';
import { at, eachFreshStorage, type OpenStorage } from './storages.js';

const TRIGGER_A = 'trg_SIGNINGAAAAAAAAAA';
const TRIGGER_B = 'trg_SIGNINGBBBBBBBBBB';

function trigger(id: string): TriggerRecord {
  return {
    id,
    botId: 'echo',
    accountId: 'acct',
    name: id,
    type: 'webhook',
    keys: [],
    createdAt: at(0),
  };
}

/** A secret created at `at(n)`; ids of digits only, so every database orders them alike. */
function secret(n: number, fields: Partial<SigningSecretRecord> = {}): SigningSecretRecord {
  return {
    id: `sgs_${String(n).padStart(20, '0')}`,
    triggerId: TRIGGER_A,
    secret: `whsec_secret${n}`,
    createdAt: at(n),
    expiresAt: null,
    revokedAt: null,
    ...fields,
  };
}

const ids = (list: SigningSecretRecord[]) => list.map((s) => s.id);

/**
 * Triggers' signed-request modes and signing secrets (`SigningSecretStore`), the same checks on every
 * implementation (test/contracts/storage.contract.ts). Call inside a `describe`.
 */
export function signingSecretStoreContract(open: OpenStorage): void {
  let s: WebhookStorage;
  eachFreshStorage(open, (storage) => (s = storage));

  it('a trigger is "off" until its mode is set; the mode is read back with the trigger; a deleted or unknown trigger is refused', async () => {
    await s.triggers.create(trigger(TRIGGER_A));
    // Absent means off: a trigger made before signed requests existed reads the same.
    expect((await s.triggers.findActive(TRIGGER_A))?.requestSigning ?? 'off').toBe('off');
    expect(await s.signing.setRequestSigning(TRIGGER_A, 'instead-of-key')).toBe(true);
    expect((await s.triggers.findActive(TRIGGER_A))?.requestSigning).toBe('instead-of-key');
    expect((await s.triggers.listByBot('echo'))[0].requestSigning).toBe('instead-of-key');
    expect(await s.signing.setRequestSigning(TRIGGER_A, 'with-key')).toBe(true);
    expect((await s.triggers.findActive(TRIGGER_A))?.requestSigning).toBe('with-key');
    expect(await s.signing.setRequestSigning(TRIGGER_A, 'off')).toBe(true);
    expect((await s.triggers.findActive(TRIGGER_A))?.requestSigning ?? 'off').toBe('off');
    expect(await s.signing.setRequestSigning(TRIGGER_B, 'with-key')).toBe(false);
    await s.triggers.delete(TRIGGER_A);
    expect(await s.signing.setRequestSigning(TRIGGER_A, 'off')).toBe(false);
  });

  it('stores secrets as given and lists a trigger’s own, newest first, bounded by the limit', async () => {
    await s.signing.insertSecret(secret(1));
    await s.signing.insertSecret(secret(3, { expiresAt: at(100) }));
    await s.signing.insertSecret(secret(2));
    await s.signing.insertSecret(secret(4, { triggerId: TRIGGER_B }));
    const listed = await s.signing.listSecrets(TRIGGER_A, 10);
    expect(ids(listed)).toEqual([secret(3).id, secret(2).id, secret(1).id]);
    expect(listed[0]).toEqual(secret(3, { expiresAt: at(100) }));
    expect(ids(await s.signing.listSecrets(TRIGGER_A, 2))).toEqual([secret(3).id, secret(2).id]);
    expect(ids(await s.signing.listSecrets(TRIGGER_B, 10))).toEqual([secret(4).id]);
  });

  it('usable secrets: not revoked and not expired at the given time (an expiry equal to now has ended)', async () => {
    await s.signing.insertSecret(secret(1, { expiresAt: at(50) }));
    await s.signing.insertSecret(secret(2, { revokedAt: at(10) }));
    await s.signing.insertSecret(secret(3));
    expect(ids(await s.signing.usableSecrets(TRIGGER_A, at(49)))).toEqual([secret(3).id, secret(1).id]);
    expect(ids(await s.signing.usableSecrets(TRIGGER_A, at(50)))).toEqual([secret(3).id]);
    expect(await s.signing.usableSecrets(TRIGGER_B, at(0))).toEqual([]);
  });

  it('expireOthers ends the others at the time given, never later than they already end, and skips revoked ones', async () => {
    await s.signing.insertSecret(secret(1));
    await s.signing.insertSecret(secret(2, { expiresAt: at(20) }));
    await s.signing.insertSecret(secret(3, { revokedAt: at(5) }));
    await s.signing.insertSecret(secret(4, { expiresAt: at(900) }));
    await s.signing.insertSecret(secret(5));
    await s.signing.insertSecret(secret(6, { triggerId: TRIGGER_B }));
    expect(await s.signing.expireOthers(TRIGGER_A, secret(5).id, at(100))).toBe(2);
    const byId = new Map((await s.signing.listSecrets(TRIGGER_A, 10)).map((r) => [r.id, r]));
    expect(byId.get(secret(1).id)!.expiresAt).toEqual(at(100));
    expect(byId.get(secret(2).id)!.expiresAt).toEqual(at(20));
    expect(byId.get(secret(3).id)!.expiresAt).toBeNull();
    expect(byId.get(secret(4).id)!.expiresAt).toEqual(at(100));
    expect(byId.get(secret(5).id)!.expiresAt).toBeNull();
    expect((await s.signing.listSecrets(TRIGGER_B, 10))[0].expiresAt).toBeNull();
  });

  it('a rotation in a unit of work that fails leaves neither the new secret nor the expiry', async () => {
    await s.signing.insertSecret(secret(1));
    await expect(
      s.unitOfWork.run(async (tx) => {
        await s.signing.insertSecret(secret(2), tx);
        await s.signing.expireOthers(TRIGGER_A, secret(2).id, at(100), tx);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await s.signing.listSecrets(TRIGGER_A, 10)).toEqual([secret(1)]);
  });

  it('revokes one secret once, only through its own trigger', async () => {
    await s.signing.insertSecret(secret(1));
    await s.signing.insertSecret(secret(2));
    expect(await s.signing.revokeSecret(TRIGGER_B, secret(1).id, at(30))).toBe(false);
    expect(await s.signing.revokeSecret(TRIGGER_A, secret(1).id, at(30))).toBe(true);
    expect(await s.signing.revokeSecret(TRIGGER_A, secret(1).id, at(40))).toBe(false);
    expect(await s.signing.revokeSecret(TRIGGER_A, 'sgs_unknown', at(40))).toBe(false);
    const [newest, revoked] = await s.signing.listSecrets(TRIGGER_A, 10);
    expect(newest.revokedAt).toBeNull();
    expect(revoked.revokedAt).toEqual(at(30));
    expect(ids(await s.signing.usableSecrets(TRIGGER_A, at(31)))).toEqual([secret(2).id]);
  });
}
