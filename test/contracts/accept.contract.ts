import type { AcceptOutcome, WebhookStorage } from '../../src/persistence/webhook-storage.js';
import { at, eachFreshStorage, numberedRuns, type OpenStorage } from './storages.js';

const TRIGGER_A = 'trg_ACCEPTAAAAAAAAAAA';
const TRIGGER_B = 'trg_ACCEPTBBBBBBBBBBB';
/** Every key used here is younger than this: within its time to live. */
const SINCE = at(0);

/**
 * `WebhookStorage.accept`, the accept step of a trigger request (the default one, or PostgreSQL's batches),
 * the same checks on every implementation (test/contracts/storage.contract.ts). Call inside a `describe`.
 */
export function acceptContract(open: OpenStorage): void {
  let s: WebhookStorage;
  eachFreshStorage(open, (storage) => (s = storage));

  const newRun = numberedRuns(TRIGGER_A);

  it('accepts a run the account can pay for: stored queued, its credits debited', async () => {
    await s.accounts.setBalance('acct', 5);
    const traceContext = JSON.stringify({ traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` });
    const run = newRun({ credits: 2, idempotencyKey: 'order-1', requestHash: 'h1', traceContext });
    expect(await s.accept(run, SINCE)).toEqual({ kind: 'accepted' });
    expect(await s.invocations.findById(run.id)).toMatchObject({
      status: 'queued',
      credits: 2,
      idempotencyKey: 'order-1',
      requestHash: 'h1',
      traceContext,
    });
    expect(await s.accounts.getBalance('acct')).toBe(3);
    expect(await s.invocations.listQueued(10)).toEqual([{ id: run.id, accountId: 'acct' }]);
  });

  it('stores a run its accept step claimed as running, owned and leased', async () => {
    await s.accounts.setBalance('acct', 5);
    const traceContext = JSON.stringify({ traceparent: `00-${'3'.repeat(32)}-${'4'.repeat(16)}-01` });
    const run = newRun({ claim: { owner: 'worker-1', startedAt: at(50), leaseExpiresAt: at(65) }, traceContext });
    expect(await s.accept(run, SINCE)).toEqual({ kind: 'accepted' });
    expect(await s.invocations.findById(run.id)).toMatchObject({
      status: 'running',
      owner: 'worker-1',
      startedAt: at(50),
      attempts: 1,
      traceContext,
    });
    expect(await s.invocations.markRunning(run.id, at(51), 'worker-2', at(66))).toBeNull();
    expect(await s.invocations.transition(run.id, 'running', 'succeeded', { finishedAt: at(52) }, { owner: 'worker-1' })).toBe(true);
    expect(await s.accounts.getBalance('acct')).toBe(4);
  });

  it('accepts a free run on an account never opened, charging nothing and opening nothing', async () => {
    const run = newRun({ credits: 0, accountId: 'never-opened' });
    expect(await s.accept(run, SINCE)).toEqual({ kind: 'accepted' });
    expect((await s.invocations.findById(run.id))?.status).toBe('queued');
    expect(await s.accounts.getBalance('never-opened')).toBeNull();
  });

  it('answers a repeated idempotency key with the earlier run and its request hash: nothing stored, nothing charged', async () => {
    await s.accounts.setBalance('acct', 5);
    const first = newRun({ idempotencyKey: 'order-1', requestHash: 'h1' });
    expect(await s.accept(first, SINCE)).toEqual({ kind: 'accepted' });
    const again = newRun({ idempotencyKey: 'order-1', requestHash: 'h2' });
    expect(await s.accept(again, SINCE)).toEqual({ kind: 'repeat', earlier: { id: first.id, requestHash: 'h1' } });
    expect(await s.invocations.findById(again.id)).toBeNull();
    expect(await s.accounts.getBalance('acct')).toBe(4);
    // The same key on another trigger is another request.
    const other = newRun({ idempotencyKey: 'order-1', triggerId: TRIGGER_B });
    expect(await s.accept(other, SINCE)).toEqual({ kind: 'accepted' });
    expect(await s.accounts.getBalance('acct')).toBe(3);
  });

  it('answers a repeat even when the account could no longer pay for it', async () => {
    await s.accounts.setBalance('acct', 1);
    const first = newRun({ idempotencyKey: 'order-1', requestHash: null });
    expect(await s.accept(first, SINCE)).toEqual({ kind: 'accepted' });
    expect(await s.accept(newRun({ idempotencyKey: 'order-1' }), SINCE)).toEqual({
      kind: 'repeat',
      earlier: { id: first.id, requestHash: null },
    });
    expect(await s.accounts.getBalance('acct')).toBe(0);
  });

  it.each([
    ['short of credits', true, 1],
    ['never opened', false, null],
  ] as const)(
    'refuses a run the account cannot pay for (%s): funded %s, nothing stored or charged, its key still free',
    async (_case, funded, balance) => {
      if (balance !== null) await s.accounts.setBalance('acct', balance);
      const run = newRun({ credits: 2, idempotencyKey: 'order-1' });
      expect(await s.accept(run, SINCE)).toEqual({ kind: 'refused', funded });
      expect(await s.invocations.findById(run.id)).toBeNull();
      expect(await s.accounts.getBalance('acct')).toBe(balance);
      expect(await s.invocations.findByIdempotencyKey(TRIGGER_A, 'order-1', SINCE)).toBeNull();
      await s.accounts.setBalance('acct', 2);
      const paid = newRun({ credits: 2, idempotencyKey: 'order-1' });
      expect(await s.accept(paid, SINCE)).toEqual({ kind: 'accepted' });
      expect(await s.accounts.getBalance('acct')).toBe(0);
    },
  );

  it('lets a key used before `since` be used again: a new run, charged, the old run kept without its key', async () => {
    await s.accounts.setBalance('acct', 5);
    const old = newRun({ idempotencyKey: 'order-1', requestHash: 'h1', createdAt: at(10) });
    expect(await s.accept(old, SINCE)).toEqual({ kind: 'accepted' });
    // Still within its time to live when `since` is its creation time.
    expect(await s.accept(newRun({ idempotencyKey: 'order-1', createdAt: at(20) }), at(10))).toEqual({
      kind: 'repeat',
      earlier: { id: old.id, requestHash: 'h1' },
    });
    const fresh = newRun({ idempotencyKey: 'order-1', requestHash: 'h2', createdAt: at(30) });
    expect(await s.accept(fresh, at(11))).toEqual({ kind: 'accepted' });
    expect(await s.invocations.findById(old.id)).toMatchObject({ status: 'queued', idempotencyKey: null });
    expect(await s.invocations.findById(fresh.id)).toMatchObject({ status: 'queued', idempotencyKey: 'order-1' });
    expect(await s.accounts.getBalance('acct')).toBe(3);
    expect(await s.accept(newRun({ idempotencyKey: 'order-1' }), at(11))).toEqual({
      kind: 'repeat',
      earlier: { id: fresh.id, requestHash: 'h2' },
    });
  });

  it('never overdraws under concurrent accepts: 20 at once with credits for 7 → exactly 7 accepted, the rest refused funded', async () => {
    await s.accounts.setBalance('acct', 7);
    const runs = Array.from({ length: 20 }, () => newRun());
    const outcomes = await Promise.all(runs.map((run) => s.accept(run, SINCE)));
    const accepted = runs.filter((_run, i) => outcomes[i].kind === 'accepted');
    expect(accepted).toHaveLength(7);
    expect(outcomes.filter((o) => o.kind !== 'accepted')).toEqual(Array(13).fill({ kind: 'refused', funded: true }));
    expect(await s.accounts.getBalance('acct')).toBe(0);
    const queued = (await s.invocations.listQueued(100)).map((r) => r.id);
    expect(queued.sort()).toEqual(accepted.map((r) => r.id).sort());
  });

  it('decides concurrent accepts of several accounts each on its own credits', async () => {
    await s.accounts.setBalance('rich', 10);
    await s.accounts.setBalance('poor', 2);
    const runs = Array.from({ length: 12 }, (_v, i) =>
      newRun({ accountId: i % 2 === 0 ? 'rich' : 'poor', idempotencyKey: i === 0 ? 'k' : null }),
    );
    const outcomes = await Promise.all(runs.map((run) => s.accept(run, SINCE)));
    const acceptedOf = (account: string) => runs.filter((r, i) => r.accountId === account && outcomes[i].kind === 'accepted').length;
    expect(acceptedOf('rich')).toBe(6);
    expect(acceptedOf('poor')).toBe(2);
    expect(await s.accounts.getBalance('rich')).toBe(4);
    expect(await s.accounts.getBalance('poor')).toBe(0);
    expect(await s.invocations.listQueued(100)).toHaveLength(8);
  });

  it('gives one of 10 concurrent accepts with one key the run, and the others a repeat of it: one charge', async () => {
    await s.accounts.setBalance('acct', 100);
    const runs = Array.from({ length: 10 }, (_v, i) => newRun({ idempotencyKey: 'order-42', requestHash: `h${i}` }));
    const outcomes: AcceptOutcome[] = await Promise.all(runs.map((run) => s.accept(run, SINCE)));
    const winners = runs.filter((_run, i) => outcomes[i].kind === 'accepted');
    expect(winners).toHaveLength(1);
    const [winner] = winners;
    expect(outcomes.filter((o) => o.kind !== 'accepted')).toEqual(
      Array(9).fill({ kind: 'repeat', earlier: { id: winner.id, requestHash: winner.requestHash } }),
    );
    expect(await s.accounts.getBalance('acct')).toBe(99);
    expect(await s.invocations.listQueued(100)).toEqual([{ id: winner.id, accountId: 'acct' }]);
  });
}
