import { IdempotencyKeyTakenError } from '../../src/errors/webhook-trigger.errors.js';
import type { InvocationRecord, NewInvocation, TriggerRecord } from '../../src/persistence/records.js';
import type { WebhookStorage } from '../../src/persistence/webhook-storage.js';
import type { OpenStorage } from './storages.js';

const T0 = Date.UTC(2026, 0, 1);
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const TRIGGER_A = 'trg_AAAAAAAAAAAAAAAA';
const TRIGGER_B = 'trg_BBBBBBBBBBBBBBBB';
let counter = 0;

function newInvocation(fields: Partial<NewInvocation> = {}): NewInvocation {
  counter++;
  return {
    id: `inv_${String(counter).padStart(22, '0')}`,
    triggerId: TRIGGER_A,
    botId: 'echo',
    accountId: 'acct',
    inputs: { n: counter, nested: { list: [1, 'two'] } },
    credits: 2,
    idempotencyKey: null,
    requestHash: null,
    createdAt: at(counter),
    traceContext: null,
    ...fields,
  };
}

function newTrigger(fields: Partial<TriggerRecord> = {}, keyCiphertext: string | null = null): TriggerRecord {
  counter++;
  const id = `trg_${String(counter).padStart(16, '0')}`;
  const key = { id: `key_${String(counter).padStart(16, '0')}`, triggerId: id, label: 'Key 1', keyHash: 'a'.repeat(64), keyCiphertext };
  const times = { createdAt: at(counter), expiresAt: null, rotatedAt: null, revokedAt: null, lastUsedAt: null };
  return {
    id,
    botId: 'echo',
    accountId: 'acct',
    name: `trigger ${counter}`,
    type: 'webhook',
    keys: [{ ...key, ...times }],
    createdAt: at(counter),
    ...fields,
  };
}

/**
 * The stores of a `WebhookStorage` (runs, triggers, credits, the unit of work), the same checks on every
 * implementation (test/contracts/storage.contract.ts). Call inside a `describe`.
 */
export function storeContract(open: OpenStorage): void {
  let s: WebhookStorage;
  let close: () => Promise<void>;

  beforeEach(async () => {
    ({ storage: s, close } = await open());
  });

  afterEach(async () => {
    await close();
  });

  /** Inserts and claims a run, as the executor does, with a lease ending at `leaseEnds`. */
  async function running(owner: string, leaseEnds: Date, fields: Partial<NewInvocation> = {}): Promise<NewInvocation> {
    const invocation = newInvocation(fields);
    await s.invocations.insert(invocation);
    expect(await s.invocations.markRunning(invocation.id, at(1000), owner, leaseEnds)).not.toBeNull();
    return invocation;
  }

  describe('InvocationRepository', () => {
    it('stores a new run as queued, with every field as given and nothing else set', async () => {
      const traceContext = JSON.stringify({ traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`, tracestate: 'vendor=x,other=y' });
      const invocation = newInvocation({ idempotencyKey: 'k1', requestHash: 'h'.repeat(64), traceContext });
      await s.invocations.insert(invocation);
      expect(await s.invocations.findById(invocation.id)).toEqual({
        ...invocation,
        status: 'queued',
        outputs: null,
        error: null,
        startedAt: null,
        finishedAt: null,
        owner: null,
        attempts: 0,
      });
      // Real Dates of the caller's realm (structuredClone under Jest would hand out another realm's).
      expect((await s.invocations.findById(invocation.id))?.createdAt).toBeInstanceOf(Date);
      expect(await s.invocations.findById('inv_unknown')).toBeNull();
    });

    it('hands out copies: changing a returned record does not change the stored run', async () => {
      const invocation = newInvocation();
      await s.invocations.insert(invocation);
      const first = (await s.invocations.findById(invocation.id))!;
      first.status = 'succeeded';
      (first.inputs as { n: number }).n = -1;
      const again = (await s.invocations.findById(invocation.id))!;
      expect(again.status).toBe('queued');
      expect(again.inputs).toEqual(invocation.inputs);
    });

    it('keeps an idempotency key unique per trigger: a second insert throws IdempotencyKeyTakenError', async () => {
      await s.invocations.insert(newInvocation({ idempotencyKey: 'same' }));
      const second = newInvocation({ idempotencyKey: 'same' });
      const error = await s.invocations.insert(second).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(IdempotencyKeyTakenError);
      expect(error).toMatchObject({ triggerId: TRIGGER_A, idempotencyKey: 'same' });
      expect(await s.invocations.findById(second.id)).toBeNull();
      // The same key on another trigger, and runs without a key, never conflict.
      await s.invocations.insert(newInvocation({ idempotencyKey: 'same', triggerId: TRIGGER_B }));
      await s.invocations.insert(newInvocation());
      await s.invocations.insert(newInvocation());
      expect(await s.invocations.listQueued(10)).toHaveLength(4);
    });

    it('finds a run by idempotency key on its trigger, created at or after `since`', async () => {
      const invocation = newInvocation({ idempotencyKey: 'k', requestHash: 'hash' });
      await s.invocations.insert(invocation);
      const created = invocation.createdAt.getTime();
      expect((await s.invocations.findByIdempotencyKey(TRIGGER_A, 'k', new Date(created)))?.id).toBe(invocation.id);
      expect((await s.invocations.findByIdempotencyKey(TRIGGER_A, 'k', new Date(created - 1)))?.requestHash).toBe('hash');
      expect(await s.invocations.findByIdempotencyKey(TRIGGER_A, 'k', new Date(created + 1))).toBeNull();
      expect(await s.invocations.findByIdempotencyKey(TRIGGER_B, 'k', new Date(0))).toBeNull();
      expect(await s.invocations.findByIdempotencyKey(TRIGGER_A, 'other', new Date(0))).toBeNull();
    });

    it('releases a key used before `before` only, so it can be used again; the run itself stays', async () => {
      const old = newInvocation({ idempotencyKey: 'k' });
      const recent = newInvocation({ idempotencyKey: 'r' });
      await s.invocations.insert(old);
      await s.invocations.insert(recent);
      await s.invocations.releaseIdempotencyKey(TRIGGER_A, 'k', new Date(old.createdAt.getTime() + 1));
      await s.invocations.releaseIdempotencyKey(TRIGGER_A, 'r', recent.createdAt);
      expect((await s.invocations.findById(old.id))?.idempotencyKey).toBeNull();
      expect((await s.invocations.findById(recent.id))?.idempotencyKey).toBe('r');
      await s.invocations.insert(newInvocation({ idempotencyKey: 'k' }));
      await expect(s.invocations.insert(newInvocation({ idempotencyKey: 'r' }))).rejects.toBeInstanceOf(IdempotencyKeyTakenError);
    });

    it('changes state only from the stated status, once, writing the given fields', async () => {
      const invocation = newInvocation();
      await s.invocations.insert(invocation);
      const fields = { finishedAt: at(5000), error: { message: 'The run was cancelled', code: 'cancelled' } };
      expect(await s.invocations.transition(invocation.id, 'running', 'cancelled', fields)).toBe(false);
      expect((await s.invocations.findById(invocation.id))?.status).toBe('queued');
      expect(await s.invocations.transition(invocation.id, 'queued', 'cancelled', fields)).toBe(true);
      expect(await s.invocations.transition(invocation.id, 'queued', 'cancelled', fields)).toBe(false);
      expect(await s.invocations.findById(invocation.id)).toMatchObject({ status: 'cancelled', ...fields, outputs: null, startedAt: null });
      expect(await s.invocations.transition('inv_unknown', 'queued', 'cancelled', fields)).toBe(false);
    });

    it('claims a queued run once, recording its owner, and only a queued one', async () => {
      const invocation = newInvocation();
      await s.invocations.insert(invocation);
      const claimed = await s.invocations.markRunning(invocation.id, at(100), 'worker-1', at(115));
      const expected = {
        ...invocation,
        status: 'running',
        outputs: null,
        error: null,
        startedAt: at(100),
        finishedAt: null,
        owner: 'worker-1',
        attempts: 1,
      };
      expect(claimed).toEqual(expected);
      expect(await s.invocations.findById(invocation.id)).toEqual(expected);
      expect(await s.invocations.markRunning(invocation.id, at(101), 'worker-2', at(116))).toBeNull();
      expect((await s.invocations.findById(invocation.id))?.owner).toBe('worker-1');
      expect(await s.invocations.markRunning('inv_unknown', at(100), 'worker-1', at(115))).toBeNull();
      const cancelled = newInvocation();
      await s.invocations.insert(cancelled);
      await s.invocations.transition(cancelled.id, 'queued', 'cancelled', { finishedAt: at(1) });
      expect(await s.invocations.markRunning(cancelled.id, at(100), 'worker-1', at(115))).toBeNull();
    });

    it('stores a run its accept step claimed as running, owned and leased, its first attempt counted; it cannot be claimed again', async () => {
      const { claim, ...invocation } = newInvocation({ claim: { owner: 'worker-1', startedAt: at(100), leaseExpiresAt: at(115) } });
      expect(s.invocations.storesClaims).toBe(true);
      await s.invocations.insert({ ...invocation, claim });
      const expected = {
        ...invocation,
        status: 'running',
        outputs: null,
        error: null,
        startedAt: at(100),
        finishedAt: null,
        owner: 'worker-1',
        attempts: 1,
      };
      expect(await s.invocations.findById(invocation.id)).toEqual(expected);
      expect(await s.invocations.markRunning(invocation.id, at(101), 'worker-2', at(116))).toBeNull();
      // Leased like a claimed run: recovered once its lease ran out, not before.
      expect((await s.invocations.listExpiredLeases(at(114), 10)).map((r) => r.id)).not.toContain(invocation.id);
      expect((await s.invocations.listExpiredLeases(at(116), 10)).map((r) => r.id)).toContain(invocation.id);
    });

    it('finishes a running run only for its owner when an owner is given', async () => {
      const invocation = await running('worker-1', at(2000));
      const outcome = { finishedAt: at(1500), outputs: [{ title: 't', message: 'm' }], error: null };
      expect(await s.invocations.transition(invocation.id, 'running', 'succeeded', outcome, { owner: 'worker-2' })).toBe(false);
      expect((await s.invocations.findById(invocation.id))?.status).toBe('running');
      expect(await s.invocations.transition(invocation.id, 'running', 'succeeded', outcome, { owner: 'worker-1' })).toBe(true);
      expect(await s.invocations.findById(invocation.id)).toMatchObject({ status: 'succeeded', ...outcome, startedAt: at(1000) });
    });

    it.each(['succeeded', 'failed', 'cancelled', 'timed_out'] as const)(
      'never changes a finished run: once %s, no transition, emitted output, start or recovery applies, with or without its owner',
      async (terminal) => {
        const invocation = await running('worker-1', at(2000));
        const ended = { finishedAt: at(1500), outputs: [{ title: 'first', message: 'kept' }], error: null };
        expect(await s.invocations.transition(invocation.id, 'running', terminal, ended)).toBe(true);
        const stored = await s.invocations.findById(invocation.id);
        // A late outcome from its (former) owner, a cancel, a recovery: none lands.
        const late = { finishedAt: at(1600), outputs: [{ title: 'late', message: 'lost' }], error: { message: 'late' } };
        for (const to of ['succeeded', 'failed', 'cancelled', 'timed_out'] as const) {
          expect(await s.invocations.transition(invocation.id, 'running', to, late, { owner: 'worker-1' })).toBe(false);
          expect(await s.invocations.transition(invocation.id, 'running', to, late)).toBe(false);
          expect(await s.invocations.transition(invocation.id, 'queued', to, late)).toBe(false);
        }
        // Nor an emitted output, a second start, or the recovery of a run its owner lost.
        expect(await s.invocations.appendOutput(invocation.id, 'worker-1', { title: 'late', message: 'emitted' })).toBe(false);
        expect(await s.invocations.markRunning(invocation.id, at(1700), 'worker-2', at(2700))).toBeNull();
        expect(await s.invocations.recoverInterrupted(invocation.id, { owner: 'worker-1' }, 'failed', late)).toBe(false);
        expect(await s.invocations.recoverInterrupted(invocation.id, { leaseExpiredBefore: at(99_999) }, 'queued', {})).toBe(false);
        expect(await s.invocations.findById(invocation.id)).toEqual(stored);
        expect(stored).toMatchObject({ status: terminal, ...ended });
      },
    );

    it('appends emitted outputs to a running run for its owner only, in order, and keeps them when it ends', async () => {
      const invocation = await running('worker-1', at(2000));
      const a = { title: 'step 1', message: 'é "quoted" ]' };
      const b = { title: 'step 2', message: '2' };
      expect(await s.invocations.appendOutput(invocation.id, 'worker-2', a)).toBe(false);
      expect((await s.invocations.findById(invocation.id))?.outputs).toBeNull();
      expect(await s.invocations.appendOutput(invocation.id, 'worker-1', { ...a, extra: 'dropped' } as typeof a)).toBe(true);
      expect(await s.invocations.appendOutput(invocation.id, 'worker-1', b)).toBe(true);
      expect((await s.invocations.findById(invocation.id))?.outputs).toEqual([a, b]);
      // A failure that names no outputs keeps the emitted ones; then nothing more is appended.
      const failed = { finishedAt: at(2500), error: { message: 'The run was interrupted', code: 'interrupted' } };
      expect(await s.invocations.recoverInterrupted(invocation.id, { owner: 'worker-1' }, 'failed', failed)).toBe(true);
      expect(await s.invocations.appendOutput(invocation.id, 'worker-1', b)).toBe(false);
      expect(await s.invocations.findById(invocation.id)).toMatchObject({ status: 'failed', outputs: [a, b] });
      expect(await s.invocations.appendOutput('inv_unknown', 'worker-1', a)).toBe(false);
      const queued = newInvocation();
      await s.invocations.insert(queued);
      expect(await s.invocations.appendOutput(queued.id, 'worker-1', a)).toBe(false);
    });

    it('appends after outputs written empty ([]) as well as after none (NULL)', async () => {
      const invocation = await running('w', at(2000));
      await s.invocations.transition(invocation.id, 'running', 'running', { outputs: [] }, { owner: 'w' });
      expect(await s.invocations.appendOutput(invocation.id, 'w', { title: 't', message: 'm' })).toBe(true);
      expect((await s.invocations.findById(invocation.id))?.outputs).toEqual([{ title: 't', message: 'm' }]);
    });

    it("lists running runs whose lease ran out, oldest first, up to the limit; renewal takes an owner's runs off", async () => {
      const a = await running('dead', at(10));
      const b = await running('alive', at(20));
      const c = await running('dead', at(30));
      await running('fresh', at(5000));
      const queued = newInvocation();
      await s.invocations.insert(queued);
      const ids = async (limit = 10) => (await s.invocations.listExpiredLeases(at(100), limit)).map((r) => r.id);
      expect(await ids()).toEqual([a.id, b.id, c.id]);
      expect(await ids(2)).toEqual([a.id, b.id]);
      await s.invocations.renewLeases('alive', [b.id], at(200));
      expect(await ids()).toEqual([a.id, c.id]);
      // A run that finished keeps no lease worth renewing or recovering.
      await s.invocations.transition(a.id, 'running', 'succeeded', { finishedAt: at(50) });
      await s.invocations.renewLeases('dead', [a.id, c.id], at(200));
      expect(await ids()).toEqual([]);
      expect((await s.invocations.listExpiredLeases(at(300), 10)).map((r) => r.id)).toEqual([b.id, c.id]);
    });

    it('renews only the runs named that the owner still holds: a run its owner no longer runs expires and is recovered', async () => {
      const inFlight = await running('me', at(10));
      const forgotten = await running('me', at(10)); // its outcome could not be stored: nobody runs it now
      const theirs = await running('other', at(10));
      const expired = async (now: Date) => (await s.invocations.listExpiredLeases(now, 10)).map((r) => r.id).sort();
      await s.invocations.renewLeases('me', [inFlight.id, theirs.id, 'inv_unknown'], at(200));
      expect(await expired(at(100))).toEqual([forgotten.id, theirs.id].sort());
      await s.invocations.renewLeases('me', [], at(300)); // nothing in flight: nothing renewed
      expect(await expired(at(250))).toEqual([inFlight.id, forgotten.id, theirs.id].sort());
    });

    it('recovers a run whose lease is still expired: failed with the given fields, or queued again with no owner', async () => {
      const failed = await running('dead', at(10));
      const requeued = await running('dead', at(10));
      const fields = { finishedAt: at(200), outputs: [], error: { message: 'interrupted', code: 'interrupted' } };
      expect(await s.invocations.recoverInterrupted(failed.id, { leaseExpiredBefore: at(100) }, 'failed', fields)).toBe(true);
      expect(await s.invocations.findById(failed.id)).toMatchObject({ status: 'failed', ...fields });
      expect(await s.invocations.recoverInterrupted(failed.id, { leaseExpiredBefore: at(100) }, 'failed', fields)).toBe(false);

      expect(await s.invocations.recoverInterrupted(requeued.id, { leaseExpiredBefore: at(100) }, 'queued', {})).toBe(true);
      expect(await s.invocations.findById(requeued.id)).toMatchObject({ status: 'queued', startedAt: null, owner: null, finishedAt: null });
      expect(await s.invocations.listQueued(10)).toEqual([{ id: requeued.id, accountId: requeued.accountId }]);
      // Queued again, it can be claimed again by another process: its second attempt (recovery counts none).
      expect(await s.invocations.findById(requeued.id)).toMatchObject({ attempts: 1 });
      expect(await s.invocations.markRunning(requeued.id, at(300), 'worker-2', at(315))).toMatchObject({ owner: 'worker-2', attempts: 2 });
      expect(await s.invocations.listExpiredLeases(at(400), 10)).toEqual([expect.objectContaining({ id: requeued.id, attempts: 2 })]);
    });

    it('leaves a run alone once its lease is fresh again (its owner renewed it)', async () => {
      const invocation = await running('slow', at(10));
      await s.invocations.renewLeases('slow', [invocation.id], at(500));
      expect(
        await s.invocations.recoverInterrupted(invocation.id, { leaseExpiredBefore: at(100) }, 'failed', { finishedAt: at(100) }),
      ).toBe(false);
      expect(await s.invocations.findById(invocation.id)).toMatchObject({ status: 'running', owner: 'slow', finishedAt: null });
    });

    it('recovers a run declared lost by owner only while that owner still holds it', async () => {
      const held = await running('dead-worker', at(5000));
      expect(await s.invocations.recoverInterrupted(held.id, { owner: 'another' }, 'failed', { finishedAt: at(1) })).toBe(false);
      expect(await s.invocations.recoverInterrupted(held.id, { owner: 'dead-worker' }, 'queued', {})).toBe(true);
      expect(await s.invocations.findById(held.id)).toMatchObject({ status: 'queued', owner: null });
      // Claimed again by a live worker: the dead one's stalled-job report no longer applies.
      await s.invocations.markRunning(held.id, at(2000), 'live-worker', at(9000));
      expect(await s.invocations.recoverInterrupted(held.id, { owner: 'dead-worker' }, 'failed', { finishedAt: at(1) })).toBe(false);
      expect((await s.invocations.findById(held.id))?.status).toBe('running');
    });

    it('deletes finished runs created before a date, never queued or running ones, and says how many', async () => {
      const oldDone = newInvocation({ createdAt: at(1) });
      const oldQueued = newInvocation({ createdAt: at(2) });
      const recentDone = newInvocation({ createdAt: at(500) });
      for (const i of [oldDone, oldQueued, recentDone]) await s.invocations.insert(i);
      const oldRunning = await running('w', at(5000), { createdAt: at(3) });
      await s.invocations.transition(oldDone.id, 'queued', 'cancelled', { finishedAt: at(4) });
      await s.invocations.transition(recentDone.id, 'queued', 'cancelled', { finishedAt: at(501) });
      expect(await s.invocations.deleteFinishedBefore(at(100))).toBe(1);
      expect(await s.invocations.findById(oldDone.id)).toBeNull();
      for (const kept of [oldQueued, recentDone, oldRunning]) expect(await s.invocations.findById(kept.id)).not.toBeNull();
      expect(await s.invocations.deleteFinishedBefore(at(100))).toBe(0);
    });

    it('lists queued runs (id and account) oldest first, up to a limit, optionally created before a date', async () => {
      const late = newInvocation({ createdAt: at(300) });
      const early = newInvocation({ createdAt: at(100) });
      const middle = newInvocation({ createdAt: at(200) });
      for (const i of [late, early, middle]) await s.invocations.insert(i);
      await running('w', at(5000));
      const ids = async (limit: number, before?: Date) => (await s.invocations.listQueued(limit, before)).map((r) => r.id);
      expect(await ids(10)).toEqual([early.id, middle.id, late.id]);
      expect(await ids(2)).toEqual([early.id, middle.id]);
      expect(await ids(10, at(300))).toEqual([early.id, middle.id]);
      expect((await s.invocations.listQueued(1))[0]).toEqual({ id: early.id, accountId: early.accountId });
    });

    it('opens an account once and never overwrites its balance', async () => {
      expect(await s.accounts.openAccount('fresh', 5)).toBe(true);
      expect(await s.accounts.openAccount('fresh', 9)).toBe(false);
      expect(await s.accounts.getBalance('fresh')).toBe(5);
    });
  });

  describe('TriggerRepository', () => {
    it('creates, finds, lists oldest first and deletes triggers; a deleted one is gone for good', async () => {
      const late = newTrigger({ createdAt: at(20) });
      const early = newTrigger({ createdAt: at(10) }, 'v1.a.b.c');
      await s.triggers.create(late);
      await s.triggers.create(early);
      await s.triggers.create(newTrigger({ botId: 'other' }));
      expect(await s.triggers.findActive(early.id)).toEqual(early);
      expect(await s.triggers.findActive('trg_unknownunknown')).toBeNull();
      expect(await s.triggers.listByBot('echo')).toEqual([early, late]);
      expect(await s.triggers.delete(early.id)).toBe(true);
      expect(await s.triggers.delete(early.id)).toBe(false);
      expect(await s.triggers.delete('trg_unknownunknown')).toBe(false);
      expect(await s.triggers.findActive(early.id)).toBeNull();
      expect(await s.triggers.listByBot('echo')).toEqual([late]);
    });

    it('refuses a second trigger with the same id', async () => {
      const trigger = newTrigger();
      await s.triggers.create(trigger);
      // Not toThrow(): better-sqlite3's SqliteError comes from another Jest realm once a file before this one opened SQLite.
      await expect(s.triggers.create({ ...trigger, name: 'copy' })).rejects.toHaveProperty('message', expect.any(String));
      expect((await s.triggers.listByBot(trigger.botId)).filter((t) => t.id === trigger.id)).toHaveLength(1);
      expect((await s.triggers.findActive(trigger.id))?.name).toBe(trigger.name);
    });

    it("moves a bot's triggers, deleted ones too, to the bot's account of now, and names those it moved", async () => {
      const first = newTrigger({ accountId: 'default' });
      const deleted = newTrigger({ accountId: 'default' });
      const already = newTrigger({ accountId: 'acme' });
      const otherBot = newTrigger({ botId: 'other', accountId: 'default' });
      for (const trigger of [first, deleted, already, otherBot]) await s.triggers.create(trigger);
      expect(await s.triggers.delete(deleted.id)).toBe(true);
      expect((await s.triggers.assignBotAccount('echo', 'acme')).sort()).toEqual([first.id, deleted.id].sort());
      expect((await s.triggers.findActive(first.id))?.accountId).toBe('acme');
      expect((await s.triggers.findActive(already.id))?.accountId).toBe('acme');
      expect((await s.triggers.findActive(otherBot.id))?.accountId).toBe('default');
      // Once moved, nothing more to move.
      expect(await s.triggers.assignBotAccount('echo', 'acme')).toEqual([]);
    });
  });

  describe('CreditLedger and CreditAccounts', () => {
    it('debits only what an account holds, atomically; an unknown account has nothing', async () => {
      expect(await s.accounts.getBalance('acct')).toBeNull();
      expect(await s.ledger.tryDebit('acct', 1)).toBe(false);
      expect(await s.accounts.getBalance('acct')).toBeNull();
      await s.accounts.setBalance('acct', 5);
      expect(await s.ledger.tryDebit('acct', 3)).toBe(true);
      expect(await s.ledger.tryDebit('acct', 3)).toBe(false);
      expect(await s.accounts.getBalance('acct')).toBe(2);
      expect(await s.ledger.tryDebit('acct', 2)).toBe(true);
      expect(await s.accounts.getBalance('acct')).toBe(0);
    });

    it('never overspends under concurrent debits', async () => {
      await s.accounts.setBalance('acct', 5);
      const results = await Promise.all(Array.from({ length: 12 }, () => s.ledger.tryDebit('acct', 1)));
      expect(results.filter(Boolean)).toHaveLength(5);
      expect(await s.accounts.getBalance('acct')).toBe(0);
    });

    it('refunds to an existing account and never creates one', async () => {
      await s.accounts.setBalance('acct', 1);
      await s.ledger.refund('acct', 4);
      expect(await s.accounts.getBalance('acct')).toBe(5);
      await s.ledger.refund('ghost', 4);
      expect(await s.accounts.getBalance('ghost')).toBeNull();
    });

    it('sets a balance, creating or overwriting the account; a negative one is refused', async () => {
      await s.accounts.setBalance('acct', 7);
      await s.accounts.setBalance('acct', 3);
      expect(await s.accounts.getBalance('acct')).toBe(3);
      await expect(s.accounts.setBalance('acct', -1)).rejects.toHaveProperty('message', expect.any(String)); // see above: not toThrow()
      expect(await s.accounts.getBalance('acct')).toBe(3);
    });
  });

  describe('WebhookUnitOfWork', () => {
    it('commits the insert and the debit of a unit together, and resolves with its value', async () => {
      await s.accounts.setBalance('acct', 3);
      const invocation = newInvocation();
      const value = await s.unitOfWork.run(async (tx) => {
        await s.invocations.insert(invocation, tx);
        return s.ledger.tryDebit('acct', 2, tx);
      });
      expect(value).toBe(true);
      expect((await s.invocations.findById(invocation.id))?.status).toBe('queued');
      expect(await s.accounts.getBalance('acct')).toBe(1);
    });

    it('leaves no insert and no debit behind when the unit fails, and rethrows its error', async () => {
      await s.accounts.setBalance('acct', 3);
      const invocation = newInvocation({ idempotencyKey: 'k' });
      const failure = new Error('short of credits');
      await expect(
        s.unitOfWork.run(async (tx) => {
          await s.invocations.insert(invocation, tx);
          await s.ledger.tryDebit('acct', 2, tx);
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await s.invocations.findById(invocation.id)).toBeNull();
      expect(await s.accounts.getBalance('acct')).toBe(3);
      // The key it had taken is free again.
      await s.invocations.insert(newInvocation({ idempotencyKey: 'k' }));
    });

    it('undoes a state change, a refund and a key release of a failed unit', async () => {
      await s.accounts.setBalance('acct', 3);
      const old = newInvocation({ idempotencyKey: 'k' });
      await s.invocations.insert(old);
      await expect(
        s.unitOfWork.run(async (tx) => {
          await s.invocations.releaseIdempotencyKey(TRIGGER_A, 'k', at(100000), tx);
          await s.invocations.transition(old.id, 'queued', 'cancelled', { finishedAt: at(9) }, { tx });
          await s.ledger.refund('acct', 2, tx);
          throw new Error('refund failed');
        }),
      ).rejects.toThrow('refund failed');
      expect(await s.invocations.findById(old.id)).toMatchObject<Partial<InvocationRecord>>({
        status: 'queued',
        finishedAt: null,
        idempotencyKey: 'k',
      });
      expect(await s.accounts.getBalance('acct')).toBe(3);
    });

    it("undoes a failed unit's recovery of an interrupted run, and commits a good one's", async () => {
      const run = newInvocation();
      await s.invocations.insert(run);
      await s.invocations.markRunning(run.id, at(1), 'dead-worker', at(2));
      await expect(
        s.unitOfWork.run(async (tx) => {
          expect(await s.invocations.recoverInterrupted(run.id, { owner: 'dead-worker' }, 'failed', { finishedAt: at(3) }, tx)).toBe(true);
          throw new Error('the delivery insert failed');
        }),
      ).rejects.toThrow('the delivery insert failed');
      expect(await s.invocations.findById(run.id)).toMatchObject<Partial<InvocationRecord>>({ status: 'running', finishedAt: null });
      await s.unitOfWork.run((tx) =>
        s.invocations.recoverInterrupted(run.id, { owner: 'dead-worker' }, 'failed', { finishedAt: at(3) }, tx),
      );
      expect(await s.invocations.findById(run.id)).toMatchObject<Partial<InvocationRecord>>({ status: 'failed', finishedAt: at(3) });
    });

    it('rolls back only the failed unit of several running at once', async () => {
      await s.accounts.setBalance('acct', 10);
      const kept = [newInvocation(), newInvocation()];
      const dropped = newInvocation();
      const results = await Promise.allSettled([
        s.unitOfWork.run(async (tx) => {
          await s.invocations.insert(kept[0], tx);
          return s.ledger.tryDebit('acct', 1, tx);
        }),
        s.unitOfWork.run(async (tx) => {
          await s.invocations.insert(dropped, tx);
          await s.ledger.tryDebit('acct', 5, tx);
          throw new Error('no');
        }),
        s.unitOfWork.run(async (tx) => {
          await s.invocations.insert(kept[1], tx);
          return s.ledger.tryDebit('acct', 2, tx);
        }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(await s.accounts.getBalance('acct')).toBe(7);
      expect(await s.invocations.findById(dropped.id)).toBeNull();
      for (const i of kept) expect(await s.invocations.findById(i.id)).not.toBeNull();
    });

    it('lets a write made outside any unit through while units come and go', async () => {
      await s.accounts.setBalance('acct', 10);
      const [inUnit, alone] = await Promise.all([
        s.unitOfWork.run(async (tx) => s.ledger.tryDebit('acct', 4, tx)),
        s.ledger.tryDebit('acct', 3),
      ]);
      expect([inUnit, alone]).toEqual([true, true]);
      expect(await s.accounts.getBalance('acct')).toBe(3);
    });
  });
}
