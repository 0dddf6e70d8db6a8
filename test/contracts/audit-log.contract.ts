import type { AuditEntry } from '../../src/persistence/audit-log.js';
import type { TriggerRecord } from '../../src/persistence/records.js';
import type { WebhookStorage } from '../../src/persistence/webhook-storage.js';
import type { OpenStorage } from './storages.js';

const T0 = Date.UTC(2026, 0, 1);
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const TRIGGER_A = 'trg_AUDITAAAAAAAAAAA';
const TRIGGER_B = 'trg_AUDITBBBBBBBBBBB';
let counter = 0;

function entry(fields: Partial<AuditEntry> = {}): AuditEntry {
  counter++;
  return {
    id: `aud_${String(counter).padStart(32, '0')}`,
    at: at(counter),
    action: 'trigger.key_rotated',
    triggerId: TRIGGER_A,
    invocationId: null,
    accountId: null,
    principal: 'ada',
    details: { name: 'Orders', n: counter, shown: true, none: null },
    ...fields,
  };
}

/**
 * The audit log (`storage.audit`) and the trigger's allow-list column, on every implementation
 * (test/contracts/storage.contract.ts). Call inside a `describe`.
 */
export function auditLogContract(open: OpenStorage): void {
  let s: WebhookStorage;
  let close: () => Promise<void>;

  beforeEach(async () => {
    ({ storage: s, close } = await open());
  });

  afterEach(async () => {
    await close();
  });

  const ids = (entries: AuditEntry[]) => entries.map((e) => e.id);

  it('stores entries whole and lists them newest first (ties by id, descending)', async () => {
    const first = entry({ at: at(10), principal: null, details: {} });
    const tiedLow = entry({ at: at(20), triggerId: null, invocationId: 'inv_0000000000000000000001', accountId: 'acct' });
    const tiedHigh = entry({ at: at(20) });
    const last = entry({ at: at(30), action: 'trigger.created' });
    for (const e of [tiedHigh, first, last, tiedLow]) await s.audit.append(e);
    const listed = await s.audit.list({ limit: 10 });
    expect(ids(listed)).toEqual([last.id, tiedHigh.id, tiedLow.id, first.id]);
    expect(listed).toEqual([last, tiedHigh, tiedLow, first]);
  });

  it('filters by action, trigger, principal and time (from inclusive, to exclusive)', async () => {
    const a = entry({ at: at(10), action: 'trigger.created', principal: 'ada' });
    const b = entry({ at: at(20), action: 'credits.set', triggerId: null, accountId: 'acct', principal: 'bob' });
    const c = entry({ at: at(30), action: 'trigger.created', triggerId: TRIGGER_B, principal: 'bob' });
    const d = entry({ at: at(40), action: 'trigger.deleted', principal: null });
    for (const e of [a, b, c, d]) await s.audit.append(e);
    expect(ids(await s.audit.list({ action: 'trigger.created', limit: 10 }))).toEqual([c.id, a.id]);
    expect(ids(await s.audit.list({ triggerId: TRIGGER_A, limit: 10 }))).toEqual([d.id, a.id]);
    expect(ids(await s.audit.list({ principal: 'bob', limit: 10 }))).toEqual([c.id, b.id]);
    expect(ids(await s.audit.list({ from: at(20), to: at(40), limit: 10 }))).toEqual([c.id, b.id]);
    expect(ids(await s.audit.list({ action: 'trigger.created', principal: 'bob', limit: 10 }))).toEqual([c.id]);
    expect(await s.audit.list({ action: 'nothing.done', limit: 10 })).toEqual([]);
  });

  it('pages by keyset: each page starts after the last entry of the one before, ties included', async () => {
    const stored = [entry({ at: at(5) }), entry({ at: at(7) }), entry({ at: at(7) }), entry({ at: at(7) }), entry({ at: at(9) })];
    for (const e of stored) await s.audit.append(e);
    const newestFirst = [stored[4], stored[3], stored[2], stored[1], stored[0]].map((e) => e.id);
    const page1 = await s.audit.list({ limit: 2 });
    const page2 = await s.audit.list({ limit: 2, after: { at: page1[1].at, id: page1[1].id } });
    const page3 = await s.audit.list({ limit: 2, after: { at: page2[1].at, id: page2[1].id } });
    expect([...ids(page1), ...ids(page2), ...ids(page3)]).toEqual(newestFirst);
    expect(await s.audit.list({ limit: 2, after: { at: page3[0].at, id: page3[0].id } })).toEqual([]);
  });

  it('deletes entries older than a time, and only those', async () => {
    const old = entry({ at: at(1) });
    const atTheLine = entry({ at: at(100) });
    const recent = entry({ at: at(200) });
    for (const e of [old, atTheLine, recent]) await s.audit.append(e);
    expect(await s.audit.deleteOlderThan(at(100))).toBe(1);
    expect(ids(await s.audit.list({ limit: 10 }))).toEqual([recent.id, atTheLine.id]);
    expect(await s.audit.deleteOlderThan(at(100))).toBe(0);
  });

  it('joins a unit of work: an entry appended in a failed unit is not stored', async () => {
    const kept = entry();
    const rolledBack = entry();
    await s.unitOfWork.run((tx) => s.audit.append(kept, tx));
    await expect(
      s.unitOfWork.run(async (tx) => {
        await s.audit.append(rolledBack, tx);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(ids(await s.audit.list({ limit: 10 }))).toEqual([kept.id]);
  });

  describe("a trigger's allowed IPs", () => {
    const trigger = (id: string): TriggerRecord => ({
      id,
      botId: 'echo',
      accountId: 'acct',
      name: 'allow-listed',
      type: 'webhook',
      keys: [],
      createdAt: at(1),
    });

    it('are absent until set, then read back in order on find and list; [] clears them', async () => {
      await s.triggers.create(trigger(TRIGGER_A));
      expect((await s.triggers.findActive(TRIGGER_A))?.allowedIps).toBeUndefined();
      const ips = ['203.0.113.0/24', '2001:db8::/32', '198.51.100.7'];
      expect(await s.triggers.setAllowedIps(TRIGGER_A, ips)).toBe(true);
      expect((await s.triggers.findActive(TRIGGER_A))?.allowedIps).toEqual(ips);
      expect((await s.triggers.listByBot('echo'))[0].allowedIps).toEqual(ips);
      expect(await s.triggers.setAllowedIps(TRIGGER_A, [])).toBe(true);
      expect((await s.triggers.findActive(TRIGGER_A))?.allowedIps).toBeUndefined();
    });

    it('are stored with a new trigger, and refused for an unknown or deleted one', async () => {
      await s.triggers.create({ ...trigger(TRIGGER_B), allowedIps: ['10.0.0.0/8'] });
      expect((await s.triggers.findActive(TRIGGER_B))?.allowedIps).toEqual(['10.0.0.0/8']);
      expect(await s.triggers.setAllowedIps('trg_unknownunknown', ['10.0.0.1'])).toBe(false);
      await s.triggers.delete(TRIGGER_B);
      expect(await s.triggers.setAllowedIps(TRIGGER_B, ['10.0.0.1'])).toBe(false);
    });
  });
}
