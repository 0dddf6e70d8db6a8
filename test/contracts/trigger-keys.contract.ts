import type { TriggerKeyRecord, TriggerRecord } from '../../src/persistence/records.js';
import type { WebhookStorage } from '../../src/persistence/webhook-storage.js';
import { at, eachFreshStorage, type OpenStorage } from './storages.js';

let counter = 0;
const digits = (n: number, width: number) => String(n).padStart(width, '0');

/** A key of `triggerId` created at `at(n)`, usable until revoked; ids of digits (every database orders them alike). */
function newKey(triggerId: string, fields: Partial<TriggerKeyRecord> = {}): TriggerKeyRecord {
  const n = ++counter;
  return {
    id: `key_${digits(n, 16)}`,
    triggerId,
    label: `Key ${n}`,
    keyHash: digits(n, 64),
    keyCiphertext: null,
    createdAt: at(n),
    expiresAt: null,
    rotatedAt: null,
    revokedAt: null,
    lastUsedAt: null,
    ...fields,
  };
}

function newTrigger(keyFields: Partial<TriggerKeyRecord> = {}): TriggerRecord {
  const n = ++counter;
  const id = `trg_${digits(n, 16)}`;
  return { id, botId: 'echo', accountId: 'acct', name: `trigger ${n}`, type: 'webhook', keys: [newKey(id, keyFields)], createdAt: at(n) };
}

/**
 * The keys of `TriggerRepository` (several per trigger: add, rotate, revoke, last used), the same checks on
 * every storage (test/contracts/storage.contract.ts). Call inside a `describe`.
 */
export function triggerKeysContract(open: OpenStorage): void {
  let s: WebhookStorage;
  eachFreshStorage(open, (storage) => (s = storage));

  const keysOf = async (triggerId: string) => (await s.triggers.findActive(triggerId))?.keys ?? null;
  const rules = (now: Date, maxUsable = 10, othersExpireAt?: Date) => ({ now, maxUsable, othersExpireAt });

  it('stores a trigger with its first key, every field as given, and finds it through findActive and listByBot', async () => {
    const trigger = newTrigger({ keyCiphertext: 'v1.iv.tag.body', label: 'Deploys' });
    await s.triggers.create(trigger);
    expect(await s.triggers.findActive(trigger.id)).toEqual(trigger);
    expect(await s.triggers.listByBot('echo')).toEqual([trigger]);
    expect((await keysOf(trigger.id))?.[0].createdAt).toBeInstanceOf(Date);
  });

  it('creates a trigger and its keys all or nothing: a key id already taken stores neither', async () => {
    const first = newTrigger();
    await s.triggers.create(first);
    const second = newTrigger();
    second.keys = [{ ...second.keys[0], id: first.keys[0].id, triggerId: second.id }];
    await expect(s.triggers.create(second)).rejects.toHaveProperty('message', expect.any(String));
    expect(await s.triggers.findActive(second.id)).toBeNull();
    expect(await keysOf(first.id)).toEqual(first.keys);
  });

  it('adds keys, listed oldest first with their trigger in findActive and listByBot', async () => {
    const trigger = newTrigger();
    const other = newTrigger();
    await s.triggers.create(trigger);
    await s.triggers.create(other);
    const second = newKey(trigger.id, { expiresAt: at(10_000) });
    expect(await s.triggers.addKey(second, rules(at(0)))).toBe('added');
    expect(await keysOf(trigger.id)).toEqual([trigger.keys[0], second]);
    expect(await s.triggers.listByBot('echo')).toEqual([{ ...trigger, keys: [trigger.keys[0], second] }, other]);
  });

  it('adds no key to an unknown or deleted trigger', async () => {
    const trigger = newTrigger();
    await s.triggers.create(trigger);
    expect(await s.triggers.addKey(newKey('trg_unknownunknown'), rules(at(0)))).toBe('unknown_trigger');
    await s.triggers.delete(trigger.id);
    expect(await s.triggers.addKey(newKey(trigger.id), rules(at(0)))).toBe('unknown_trigger');
    const again = newTrigger();
    await s.triggers.create(again);
    expect(await keysOf(again.id)).toEqual(again.keys);
  });

  it('refuses a key past maxUsable and writes nothing; revoked and expired keys do not count', async () => {
    const trigger = newTrigger();
    await s.triggers.create(trigger);
    const expiring = newKey(trigger.id, { expiresAt: at(100) });
    expect(await s.triggers.addKey(expiring, rules(at(0), 2))).toBe('added');
    expect(await s.triggers.addKey(newKey(trigger.id), rules(at(50), 2))).toBe('too_many_keys');
    expect(await keysOf(trigger.id)).toEqual([trigger.keys[0], expiring]);
    // Once the second key expired (judged at `now`), there is room again.
    const third = newKey(trigger.id);
    expect(await s.triggers.addKey(third, rules(at(100), 2))).toBe('added');
    expect(await s.triggers.addKey(newKey(trigger.id), rules(at(100), 2))).toBe('too_many_keys');
    expect(await s.triggers.revokeKey(trigger.id, trigger.keys[0].id, at(101))).toBe(true);
    expect(await s.triggers.addKey(newKey(trigger.id), rules(at(102), 2))).toBe('added');
  });

  it('counts concurrent adds in turn: never more than maxUsable keys', async () => {
    const trigger = newTrigger();
    await s.triggers.create(trigger);
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => s.triggers.addKey(newKey(trigger.id), rules(at(0), 3))));
    expect(outcomes.filter((o) => o === 'added')).toHaveLength(2);
    expect(outcomes.filter((o) => o === 'too_many_keys')).toHaveLength(4);
    expect(await keysOf(trigger.id)).toHaveLength(3);
  });

  it('rotates: the other usable keys end at othersExpireAt (never later than they would), marked rotated, in the same write', async () => {
    const trigger = newTrigger(); // no expiry
    await s.triggers.create(trigger);
    const later = newKey(trigger.id, { expiresAt: at(90_000) });
    const sooner = newKey(trigger.id, { expiresAt: at(500) });
    const expired = newKey(trigger.id, { expiresAt: at(5) });
    const revoked = newKey(trigger.id);
    for (const key of [later, sooner, expired, revoked]) expect(await s.triggers.addKey(key, rules(at(0)))).toBe('added');
    expect(await s.triggers.revokeKey(trigger.id, revoked.id, at(6))).toBe(true);
    const fresh = newKey(trigger.id);
    expect(await s.triggers.addKey(fresh, rules(at(10), 10, at(1000)))).toBe('added');
    expect(await keysOf(trigger.id)).toEqual([
      { ...trigger.keys[0], expiresAt: at(1000), rotatedAt: at(10) },
      { ...later, expiresAt: at(1000), rotatedAt: at(10) },
      sooner,
      expired,
      fresh,
    ]);
  });

  it('a rotation that ends the others at once makes room at the limit; a later one never lengthens a grace', async () => {
    const trigger = newTrigger();
    await s.triggers.create(trigger);
    const second = newKey(trigger.id);
    expect(await s.triggers.addKey(second, rules(at(0), 2))).toBe('added');
    expect(await s.triggers.addKey(newKey(trigger.id), rules(at(1), 2, at(100)))).toBe('too_many_keys');
    expect(await keysOf(trigger.id)).toEqual([trigger.keys[0], second]); // nothing shortened
    const third = newKey(trigger.id);
    expect(await s.triggers.addKey(third, rules(at(1), 2, at(1)))).toBe('added');
    const afterFirst = await keysOf(trigger.id);
    expect(afterFirst?.map((k) => k.expiresAt)).toEqual([at(1), at(1), null]);
    const fourth = newKey(trigger.id);
    expect(await s.triggers.addKey(fourth, rules(at(2), 3, at(5000)))).toBe('added');
    expect((await keysOf(trigger.id))?.map((k) => [k.id, k.expiresAt])).toEqual([
      [trigger.keys[0].id, at(1)],
      [second.id, at(1)],
      [third.id, at(5000)],
      [fourth.id, null],
    ]);
  });

  it('revokes one key once: it leaves the trigger, the others stay; unknown, foreign or deleted ones are refused', async () => {
    const trigger = newTrigger();
    const other = newTrigger();
    await s.triggers.create(trigger);
    await s.triggers.create(other);
    const second = newKey(trigger.id);
    await s.triggers.addKey(second, rules(at(0)));
    expect(await s.triggers.revokeKey(trigger.id, other.keys[0].id, at(1))).toBe(false);
    expect(await s.triggers.revokeKey(trigger.id, 'key_unknownunknown', at(1))).toBe(false);
    expect(await s.triggers.revokeKey(trigger.id, trigger.keys[0].id, at(1))).toBe(true);
    expect(await s.triggers.revokeKey(trigger.id, trigger.keys[0].id, at(2))).toBe(false);
    expect(await keysOf(trigger.id)).toEqual([second]);
    expect(await keysOf(other.id)).toEqual(other.keys);
    await s.triggers.delete(trigger.id);
    expect(await s.triggers.revokeKey(trigger.id, second.id, at(3))).toBe(false);
  });

  it('records last-used times in one call, keeping a later time already stored; unknown keys are ignored', async () => {
    const trigger = newTrigger();
    await s.triggers.create(trigger);
    const second = newKey(trigger.id);
    await s.triggers.addKey(second, rules(at(0)));
    await s.triggers.recordKeyUses(new Map());
    await s.triggers.recordKeyUses(
      new Map([
        [trigger.keys[0].id, at(50)],
        [second.id, at(60)],
        ['key_unknownunknown', at(70)],
      ]),
    );
    await s.triggers.recordKeyUses(new Map([[second.id, at(55)]]));
    expect((await keysOf(trigger.id))?.map((k) => k.lastUsedAt)).toEqual([at(50), at(60)]);
  });
}
