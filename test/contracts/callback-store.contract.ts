import type { NewCallback } from '../../src/persistence/callback-store.js';
import type { AttemptResult, DeliveryRecord, TriggerRecord } from '../../src/persistence/records.js';
import type { WebhookStorage } from '../../src/persistence/webhook-storage.js';
import { at, eachFreshStorage, type OpenStorage } from './storages.js';

const TRIGGER_A = 'trg_CALLBACKAAAAAAAAA';
const TRIGGER_B = 'trg_CALLBACKBBBBBBBBB';
const TRIGGER_C = 'trg_CALLBACKCCCCCCCCC';
const RUN_A = 'inv_callback_run_aaaaaaaaaa';
const RUN_B = 'inv_callback_run_bbbbbbbbbb';

function newCallback(fields: Partial<NewCallback> = {}): NewCallback {
  return {
    triggerId: TRIGGER_A,
    url: 'https://hooks.example.com/runs',
    events: ['invocation.started', 'invocation.completed'],
    secret: 'whsec_first',
    ...fields,
  };
}

/** An attempt's result: delivered by default. */
function attempt(fields: Partial<AttemptResult> = {}): AttemptResult {
  return { status: 'delivered', attemptedAt: at(500), nextAttemptAt: null, responseStatus: 204, latencyMs: 12, error: null, ...fields };
}

/**
 * The callbacks and their deliveries (`CallbackStore`) as the SQL store keeps them, the same checks on every
 * implementation (test/contracts/storage.contract.ts). Call inside a `describe`.
 */
export function callbackStoreContract(open: OpenStorage): void {
  let s: WebhookStorage;
  eachFreshStorage(open, (storage) => (s = storage));
  let counter = 0;

  /** A new pending delivery, due at `at(10)`; ids of digits only, so every database orders them alike. */
  function newDelivery(fields: Partial<DeliveryRecord> = {}): DeliveryRecord {
    counter++;
    return {
      id: `dlv_${String(counter).padStart(20, '0')}`,
      triggerId: TRIGGER_A,
      invocationId: RUN_A,
      event: 'invocation.completed',
      msgId: `msg_${String(counter).padStart(20, '0')}`,
      body: JSON.stringify({ type: 'invocation.completed', n: counter, text: 'é "quoted"' }),
      status: 'pending',
      attempts: 0,
      nextAttemptAt: at(10),
      lastAttemptAt: null,
      responseStatus: null,
      latencyMs: null,
      lastError: null,
      createdAt: at(counter),
      traceContext: null,
      ...fields,
    };
  }

  async function stored(fields: Partial<DeliveryRecord> = {}): Promise<DeliveryRecord> {
    const delivery = newDelivery(fields);
    await s.callbacks.insertDelivery(delivery);
    return delivery;
  }

  /** The ids `listDue` answers, in its order. */
  const dueIds = async (now: Date, limit: number, skipTriggers?: string[], skipAccounts?: string[]) =>
    (await s.callbacks.listDue(now, limit, skipTriggers, skipAccounts)).map((d) => d.id);

  /** A delivery brought to `status` the way the sender does: claimed, then its attempt recorded. */
  async function finished(status: 'delivered' | 'failed', fields: Partial<DeliveryRecord> = {}): Promise<DeliveryRecord> {
    const delivery = await stored(fields);
    expect(await s.callbacks.claim(delivery.id, 'sender', at(10), at(40))).not.toBeNull();
    expect(await s.callbacks.recordAttempt(delivery.id, 'sender', attempt({ status, attemptedAt: at(11) }))).toBe(true);
    return delivery;
  }

  describe('callbacks', () => {
    it('saves a callback enabled, with no failures, created and updated now; unknown triggers have none', async () => {
      await s.callbacks.saveCallback(newCallback(), at(100));
      const found = await s.callbacks.findCallback(TRIGGER_A);
      expect(found).toEqual({
        ...newCallback(),
        enabled: true,
        consecutiveFailures: 0,
        disabledReason: null,
        createdAt: at(100),
        updatedAt: at(100),
      });
      expect(found?.createdAt).toBeInstanceOf(Date);
      expect(await s.callbacks.findCallback(TRIGGER_B)).toBeNull();
    });

    it('replaces a callback: new settings, enabled again, failures reset, its creation time kept', async () => {
      await s.callbacks.saveCallback(newCallback(), at(100));
      expect(await s.callbacks.countFailure(TRIGGER_A)).toBe(1);
      expect(await s.callbacks.disable(TRIGGER_A, 'gone (410)', at(150))).toBe(true);
      const replacement = newCallback({ url: 'https://other.example.com/hook', events: ['invocation.completed'], secret: 'whsec_second' });
      await s.callbacks.saveCallback(replacement, at(200));
      expect(await s.callbacks.findCallback(TRIGGER_A)).toEqual({
        ...replacement,
        enabled: true,
        consecutiveFailures: 0,
        disabledReason: null,
        createdAt: at(100),
        updatedAt: at(200),
      });
    });

    it('hands out copies: changing a returned callback does not change the stored one', async () => {
      await s.callbacks.saveCallback(newCallback(), at(100));
      const first = (await s.callbacks.findCallback(TRIGGER_A))!;
      first.events.push('invocation.output');
      first.enabled = false;
      expect(await s.callbacks.findCallback(TRIGGER_A)).toMatchObject({ events: newCallback().events, enabled: true });
    });

    it("replaces a callback's secret only, and says false when the trigger has no callback", async () => {
      await s.callbacks.saveCallback(newCallback(), at(100));
      await s.callbacks.countFailure(TRIGGER_A);
      expect(await s.callbacks.replaceSecret(TRIGGER_A, 'whsec_rotated', at(300))).toBe(true);
      expect(await s.callbacks.findCallback(TRIGGER_A)).toMatchObject({
        secret: 'whsec_rotated',
        url: newCallback().url,
        enabled: true,
        consecutiveFailures: 1,
        createdAt: at(100),
        updatedAt: at(300),
      });
      expect(await s.callbacks.replaceSecret(TRIGGER_B, 'whsec_rotated', at(300))).toBe(false);
      expect(await s.callbacks.findCallback(TRIGGER_B)).toBeNull();
    });

    it('deletes a callback once; only that trigger loses its callback', async () => {
      await s.callbacks.saveCallback(newCallback(), at(100));
      await s.callbacks.saveCallback(newCallback({ triggerId: TRIGGER_B }), at(100));
      expect(await s.callbacks.deleteCallback(TRIGGER_A)).toBe(true);
      expect(await s.callbacks.deleteCallback(TRIGGER_A)).toBe(false);
      expect(await s.callbacks.findCallback(TRIGGER_A)).toBeNull();
      expect((await s.callbacks.findCallback(TRIGGER_B))?.triggerId).toBe(TRIGGER_B);
    });

    it('counts failures one by one and resets them, the rest unchanged; null once the callback is gone', async () => {
      await s.callbacks.saveCallback(newCallback(), at(100));
      expect(await s.callbacks.countFailure(TRIGGER_A)).toBe(1);
      expect(await s.callbacks.countFailure(TRIGGER_A)).toBe(2);
      expect(await Promise.all([s.callbacks.countFailure(TRIGGER_A), s.callbacks.countFailure(TRIGGER_A)])).toEqual(
        expect.arrayContaining([3, 4]),
      );
      expect(await s.callbacks.findCallback(TRIGGER_A)).toMatchObject({ consecutiveFailures: 4, enabled: true, updatedAt: at(100) });
      await s.callbacks.resetFailures(TRIGGER_A);
      expect(await s.callbacks.findCallback(TRIGGER_A)).toMatchObject({ consecutiveFailures: 0, enabled: true, updatedAt: at(100) });
      expect(await s.callbacks.countFailure(TRIGGER_A)).toBe(1);
      await s.callbacks.deleteCallback(TRIGGER_A);
      expect(await s.callbacks.countFailure(TRIGGER_A)).toBeNull();
      await s.callbacks.resetFailures(TRIGGER_A);
      expect(await s.callbacks.findCallback(TRIGGER_A)).toBeNull();
    });

    it('disables an enabled callback once (true for one of several callers), keeping the reason up to 500 characters', async () => {
      await s.callbacks.saveCallback(newCallback(), at(100));
      await s.callbacks.countFailure(TRIGGER_A);
      const results = await Promise.all([1, 2, 3].map((n) => s.callbacks.disable(TRIGGER_A, `${'r'.repeat(600)}${n}`, at(200 + n))));
      expect(results.filter(Boolean)).toHaveLength(1);
      const disabled = (await s.callbacks.findCallback(TRIGGER_A))!;
      expect(disabled).toMatchObject({ enabled: false, consecutiveFailures: 1, createdAt: at(100) });
      expect(disabled.disabledReason).toBe('r'.repeat(500));
      const winner = results.indexOf(true) + 1;
      expect(disabled.updatedAt).toEqual(at(200 + winner));
      expect(await s.callbacks.disable(TRIGGER_A, 'again', at(300))).toBe(false);
      expect((await s.callbacks.findCallback(TRIGGER_A))?.disabledReason).toBe('r'.repeat(500));
      expect(await s.callbacks.disable(TRIGGER_B, 'none', at(300))).toBe(false);
      // A disabled callback still counts its failures and can be reset; only a save enables it again.
      expect(await s.callbacks.countFailure(TRIGGER_A)).toBe(2);
      await s.callbacks.resetFailures(TRIGGER_A);
      expect(await s.callbacks.findCallback(TRIGGER_A)).toMatchObject({ enabled: false, consecutiveFailures: 0 });
    });
  });

  describe('deliveries', () => {
    it('stores a new delivery with its body; the attempt fields start empty whatever was given', async () => {
      const delivery = newDelivery({ traceContext: JSON.stringify({ traceparent: `00-${'c'.repeat(32)}-${'d'.repeat(16)}-01` }) });
      await s.callbacks.insertDelivery({ ...delivery, lastAttemptAt: at(1), responseStatus: 500, latencyMs: 9, lastError: 'stale' });
      const found = await s.callbacks.findDelivery(delivery.id);
      expect(found).toEqual(delivery);
      expect(found?.createdAt).toBeInstanceOf(Date);
      expect(found?.nextAttemptAt).toBeInstanceOf(Date);
      expect(await s.callbacks.findDelivery('dlv_unknown')).toBeNull();
    });

    it('refuses a second delivery with the same id, keeping the first', async () => {
      const delivery = await stored();
      // Not toThrow(): better-sqlite3's SqliteError comes from another Jest realm once a file before this one opened SQLite.
      await expect(s.callbacks.insertDelivery({ ...delivery, body: 'copy' })).rejects.toHaveProperty('message', expect.any(String));
      expect((await s.callbacks.findDelivery(delivery.id))?.body).toBe(delivery.body);
    });

    it('joins a unit of work: committed with it, seen inside it, and gone with a failed unit', async () => {
      await s.callbacks.saveCallback(newCallback(), at(100));
      const kept = newDelivery();
      const inside = await s.unitOfWork.run(async (tx) => {
        expect((await s.callbacks.findCallback(TRIGGER_A, tx))?.url).toBe(newCallback().url);
        await s.callbacks.insertDelivery(kept, tx);
        return (await s.callbacks.listByInvocation(RUN_A, tx)).map((d) => d.id);
      });
      expect(inside).toEqual([kept.id]);
      expect(await s.callbacks.findDelivery(kept.id)).toEqual(kept);

      const dropped = newDelivery();
      await expect(
        s.unitOfWork.run(async (tx) => {
          await s.callbacks.insertDelivery(dropped, tx);
          throw new Error('the run change failed');
        }),
      ).rejects.toThrow('the run change failed');
      expect(await s.callbacks.findDelivery(dropped.id)).toBeNull();
      expect((await s.callbacks.listByInvocation(RUN_A)).map((d) => d.id)).toEqual([kept.id]);
      expect(await dueIds(at(10), 10)).toEqual([kept.id]);
    });

    it('claims a pending, due delivery once; a second sender gets null while the lease is live, and it once the lease ran out', async () => {
      const delivery = await stored({ nextAttemptAt: at(10) });
      expect(await s.callbacks.claim(delivery.id, 'early', at(9), at(40))).toBeNull();
      const claimed = await s.callbacks.claim(delivery.id, 'first', at(10), at(40));
      expect(claimed).toEqual(delivery);
      expect(await s.callbacks.claim(delivery.id, 'second', at(20), at(50))).toBeNull();
      expect(await s.callbacks.claim(delivery.id, 'second', at(40), at(70))).toBeNull();
      expect(await s.callbacks.claim(delivery.id, 'second', at(41), at(71))).toEqual(delivery);
      // The first sender lost it: its attempt is not recorded; the second one's is.
      expect(await s.callbacks.recordAttempt(delivery.id, 'first', attempt())).toBe(false);
      expect(await s.callbacks.findDelivery(delivery.id)).toMatchObject({ status: 'pending', attempts: 0 });
      expect(await s.callbacks.recordAttempt(delivery.id, 'second', attempt())).toBe(true);
      expect(await s.callbacks.claim('dlv_unknown', 'first', at(100), at(130))).toBeNull();
    });

    it('never claims a delivered or failed delivery, nor one without a next attempt', async () => {
      const delivered = await finished('delivered');
      const failed = await finished('failed');
      const unscheduled = await stored({ nextAttemptAt: null });
      for (const d of [delivered, failed, unscheduled]) expect(await s.callbacks.claim(d.id, 'other', at(1000), at(1030))).toBeNull();
      expect(await dueIds(at(1000), 10)).toEqual([]);
    });

    it('lets one of several concurrent senders claim a delivery', async () => {
      const delivery = await stored();
      const claims = await Promise.all(['a', 'b', 'c', 'd'].map((owner) => s.callbacks.claim(delivery.id, owner, at(20), at(50))));
      expect(claims.filter((c) => c !== null)).toHaveLength(1);
    });

    it('records an attempt for its owner only, releasing the claim; a retry is due again at its time', async () => {
      const delivery = await stored();
      await s.callbacks.claim(delivery.id, 'sender', at(10), at(40));
      const retry = attempt({
        status: 'pending',
        attemptedAt: at(12),
        nextAttemptAt: at(70),
        responseStatus: 503,
        latencyMs: 30,
        error: 'e'.repeat(1200),
      });
      expect(await s.callbacks.recordAttempt(delivery.id, 'stranger', retry)).toBe(false);
      expect(await s.callbacks.recordAttempt(delivery.id, 'sender', retry)).toBe(true);
      expect(await s.callbacks.findDelivery(delivery.id)).toEqual({
        ...delivery,
        status: 'pending',
        attempts: 1,
        lastAttemptAt: at(12),
        nextAttemptAt: at(70),
        responseStatus: 503,
        latencyMs: 30,
        lastError: 'e'.repeat(1000),
      });
      // Released: the same owner cannot record a second attempt on it, and it is not due before its time.
      expect(await s.callbacks.recordAttempt(delivery.id, 'sender', retry)).toBe(false);
      expect(await dueIds(at(69), 10)).toEqual([]);
      expect(await s.callbacks.claim(delivery.id, 'other', at(69), at(99))).toBeNull();
      // Due again, any sender claims it (the lease of the first is gone with its attempt).
      expect(await dueIds(at(70), 10)).toEqual([delivery.id]);
      expect(await s.callbacks.claim(delivery.id, 'other', at(70), at(100))).toMatchObject({ attempts: 1 });
      expect(await s.callbacks.recordAttempt(delivery.id, 'other', attempt({ attemptedAt: at(71) }))).toBe(true);
      expect(await s.callbacks.findDelivery(delivery.id)).toMatchObject({
        status: 'delivered',
        attempts: 2,
        lastAttemptAt: at(71),
        nextAttemptAt: null,
        responseStatus: 204,
        latencyMs: 12,
        lastError: null,
      });
      expect(await s.callbacks.recordAttempt('dlv_unknown', 'other', attempt())).toBe(false);
    });

    it('abandons a delivery its sender holds: failed, no next attempt, the reason kept, no attempt counted', async () => {
      const delivery = await stored();
      await s.callbacks.claim(delivery.id, 'sender', at(10), at(40));
      await s.callbacks.abandon(delivery.id, 'stranger', 'not mine');
      expect(await s.callbacks.findDelivery(delivery.id)).toEqual(delivery);
      await s.callbacks.abandon(delivery.id, 'sender', `callback deleted ${'x'.repeat(1200)}`);
      expect(await s.callbacks.findDelivery(delivery.id)).toEqual({
        ...delivery,
        status: 'failed',
        nextAttemptAt: null,
        lastError: `callback deleted ${'x'.repeat(1200)}`.slice(0, 1000),
      });
      // Released with it: its sender no longer holds it.
      expect(await s.callbacks.recordAttempt(delivery.id, 'sender', attempt())).toBe(false);
      // One nobody claimed is not abandoned by a sender that does not hold it.
      const unclaimed = await stored();
      await s.callbacks.abandon(unclaimed.id, 'sender', 'not claimed');
      expect(await s.callbacks.findDelivery(unclaimed.id)).toEqual(unclaimed);
    });

    it('redelivers a finished delivery: pending and due now, its attempts kept; false when unknown', async () => {
      const delivered = await finished('delivered');
      const failed = await finished('failed');
      expect(await s.callbacks.redeliver(delivered.id, at(600))).toBe(true);
      expect(await s.callbacks.redeliver(failed.id, at(601))).toBe(true);
      expect(await s.callbacks.findDelivery(delivered.id)).toMatchObject({ status: 'pending', nextAttemptAt: at(600), attempts: 1 });
      expect(await dueIds(at(601), 10)).toEqual([delivered.id, failed.id]);
      expect(await s.callbacks.claim(failed.id, 'sender', at(601), at(631))).toMatchObject({ status: 'pending', attempts: 1 });
      expect(await s.callbacks.redeliver('dlv_unknown', at(600))).toBe(false);
    });

    it('redelivers a delivery in flight without taking it from its sender', async () => {
      const delivery = await stored();
      await s.callbacks.claim(delivery.id, 'sender', at(10), at(100));
      expect(await s.callbacks.redeliver(delivery.id, at(50))).toBe(true);
      expect(await dueIds(at(60), 10)).toEqual([]);
      expect(await s.callbacks.claim(delivery.id, 'other', at(60), at(90))).toBeNull();
      expect(await s.callbacks.recordAttempt(delivery.id, 'sender', attempt({ attemptedAt: at(61) }))).toBe(true);
      expect(await s.callbacks.findDelivery(delivery.id)).toMatchObject({ status: 'delivered', attempts: 1 });
    });

    it('lists due deliveries oldest due first, up to a limit: pending, due, and not held by a live sender', async () => {
      const late = await stored({ nextAttemptAt: at(30) });
      const early = await stored({ nextAttemptAt: at(10) });
      const middle = await stored({ nextAttemptAt: at(20) });
      await stored({ nextAttemptAt: at(41) });
      const held = await stored({ nextAttemptAt: at(5) });
      const expired = await stored({ nextAttemptAt: at(25) });
      await finished('delivered', { nextAttemptAt: at(1) });
      await s.callbacks.claim(held.id, 'live', at(5), at(100));
      await s.callbacks.claim(expired.id, 'dead', at(25), at(39));
      expect(await dueIds(at(40), 10)).toEqual([early.id, middle.id, expired.id, late.id]);
      expect(await dueIds(at(40), 2)).toEqual([early.id, middle.id]);
      expect(await dueIds(at(20), 10)).toEqual([early.id, middle.id]);
      expect(await dueIds(at(9), 10)).toEqual([]);
    });

    it('lists each due delivery with its trigger, and none of the triggers it is told to skip, oldest due first', async () => {
      const a1 = await stored({ triggerId: TRIGGER_A, nextAttemptAt: at(10) });
      const a2 = await stored({ triggerId: TRIGGER_A, nextAttemptAt: at(11) });
      const b1 = await stored({ triggerId: TRIGGER_B, nextAttemptAt: at(12) });
      const a3 = await stored({ triggerId: TRIGGER_A, nextAttemptAt: at(13) });
      const c1 = await stored({ triggerId: TRIGGER_C, nextAttemptAt: at(14) });
      expect(await s.callbacks.listDue(at(40), 10)).toEqual([
        { id: a1.id, triggerId: TRIGGER_A },
        { id: a2.id, triggerId: TRIGGER_A },
        { id: b1.id, triggerId: TRIGGER_B },
        { id: a3.id, triggerId: TRIGGER_A },
        { id: c1.id, triggerId: TRIGGER_C },
      ]);
      // A busy trigger's backlog, older than every other due delivery, does not fill the page when it is skipped.
      expect(await dueIds(at(40), 2)).toEqual([a1.id, a2.id]);
      expect(await dueIds(at(40), 2, [TRIGGER_A])).toEqual([b1.id, c1.id]);
      expect(await dueIds(at(40), 10, [TRIGGER_A, TRIGGER_C])).toEqual([b1.id]);
      expect(await dueIds(at(40), 10, [TRIGGER_A, TRIGGER_B, TRIGGER_C])).toEqual([]);
      expect(await dueIds(at(40), 10, [])).toEqual([a1.id, a2.id, b1.id, a3.id, c1.id]);
      expect(await dueIds(at(12), 10, [TRIGGER_B])).toEqual([a1.id, a2.id]);
    });

    it("lists each due delivery with its trigger's account, and none of the accounts it is told to skip", async () => {
      const trigger = (id: string, accountId: string): TriggerRecord => ({
        id,
        botId: 'echo',
        accountId,
        name: id,
        type: 'webhook',
        keys: [],
        createdAt: at(0),
      });
      await s.triggers.create(trigger(TRIGGER_A, 'acct_busy'));
      await s.triggers.create(trigger(TRIGGER_B, 'acct_other'));
      await s.triggers.create(trigger(TRIGGER_C, 'acct_busy'));
      const a1 = await stored({ triggerId: TRIGGER_A, nextAttemptAt: at(10) });
      const c1 = await stored({ triggerId: TRIGGER_C, nextAttemptAt: at(11) });
      const b1 = await stored({ triggerId: TRIGGER_B, nextAttemptAt: at(12) });
      // A delivery whose trigger has no row (a host's own data): listed without an account, never skipped by one.
      const orphan = await stored({ triggerId: 'trg_NOROWNOROWNOROWNOR', nextAttemptAt: at(13) });
      expect(await s.callbacks.listDue(at(40), 10)).toEqual([
        { id: a1.id, triggerId: TRIGGER_A, accountId: 'acct_busy' },
        { id: c1.id, triggerId: TRIGGER_C, accountId: 'acct_busy' },
        { id: b1.id, triggerId: TRIGGER_B, accountId: 'acct_other' },
        { id: orphan.id, triggerId: 'trg_NOROWNOROWNOROWNOR' },
      ]);
      // An account's backlog over all its triggers, older than the others', does not fill the page when it is skipped.
      expect(await dueIds(at(40), 1, [], ['acct_busy'])).toEqual([b1.id]);
      expect(await dueIds(at(40), 10, [], ['acct_busy'])).toEqual([b1.id, orphan.id]);
      expect(await dueIds(at(40), 10, [TRIGGER_B], ['acct_busy'])).toEqual([orphan.id]);
      expect(await dueIds(at(40), 10, [TRIGGER_A], ['acct_other'])).toEqual([c1.id, orphan.id]);
      // A deleted trigger's deliveries keep their account (they are abandoned at their attempt).
      expect(await s.triggers.delete(TRIGGER_A)).toBe(true);
      expect((await s.callbacks.listDue(at(40), 1))[0]).toEqual({ id: a1.id, triggerId: TRIGGER_A, accountId: 'acct_busy' });
    });

    it('deletes delivered and failed deliveries created before a date, never pending ones, and says how many', async () => {
      const oldDelivered = await finished('delivered', { createdAt: at(1) });
      const oldFailed = await finished('failed', { createdAt: at(2) });
      const oldPending = await stored({ createdAt: at(3) });
      const atTheDate = await finished('delivered', { createdAt: at(100) });
      const recent = await finished('failed', { createdAt: at(500) });
      expect(await s.callbacks.deleteFinishedBefore(at(100))).toBe(2);
      for (const gone of [oldDelivered, oldFailed]) expect(await s.callbacks.findDelivery(gone.id)).toBeNull();
      for (const kept of [oldPending, atTheDate, recent]) expect(await s.callbacks.findDelivery(kept.id)).not.toBeNull();
      expect(await s.callbacks.deleteFinishedBefore(at(100))).toBe(0);
    });

    it("lists a trigger's deliveries newest first (ties by id, newest first), up to a limit, without bodies", async () => {
      const first = await stored({ createdAt: at(10) });
      const tiedLow = await stored({ createdAt: at(20), invocationId: RUN_B });
      const tiedHigh = await stored({ createdAt: at(20) });
      const last = await stored({ createdAt: at(30), event: 'invocation.started' });
      await stored({ createdAt: at(40), triggerId: TRIGGER_B });
      const listed = await s.callbacks.listByTrigger(TRIGGER_A, 10);
      expect(listed.map((d) => d.id)).toEqual([last.id, tiedHigh.id, tiedLow.id, first.id]);
      expect(listed[0]).toEqual({ ...last, body: '' });
      expect(listed.every((d) => d.body === '')).toBe(true);
      expect((await s.callbacks.listByTrigger(TRIGGER_A, 2)).map((d) => d.id)).toEqual([last.id, tiedHigh.id]);
      expect(await s.callbacks.listByTrigger('trg_CALLBACKNONENONENO', 10)).toEqual([]);
    });

    it("lists a run's deliveries oldest first, as they are now, without bodies", async () => {
      const completed = await stored({ createdAt: at(30) });
      const started = await stored({ createdAt: at(10), event: 'invocation.started' });
      const output = await stored({ createdAt: at(20), event: 'invocation.output' });
      await stored({ createdAt: at(15), invocationId: RUN_B });
      await s.callbacks.claim(started.id, 'sender', at(10), at(40));
      await s.callbacks.recordAttempt(started.id, 'sender', attempt({ attemptedAt: at(11) }));
      const listed = await s.callbacks.listByInvocation(RUN_A);
      expect(listed.map((d) => d.id)).toEqual([started.id, output.id, completed.id]);
      expect(listed[0]).toEqual({
        ...started,
        body: '',
        status: 'delivered',
        attempts: 1,
        lastAttemptAt: at(11),
        nextAttemptAt: null,
        responseStatus: 204,
        latencyMs: 12,
      });
      expect(listed.every((d) => d.body === '')).toBe(true);
      expect(await s.callbacks.listByInvocation('inv_callback_run_none')).toEqual([]);
    });
  });
}
