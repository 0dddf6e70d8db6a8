import { ShutdownState } from '../lifecycle/shutdown.state.js';
import { InMemoryClusterBus } from '../cluster/in-memory-cluster.bus.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import type { InvocationRecord, InvocationStatus, InvocationTransition, NewInvocation } from '../persistence/records.js';
import { InvocationWaiter } from './invocation.waiter.js';
import { SYSTEM_CLOCK } from '../time/clock.js';
import { ProcessFullError, ShareHeldError } from '../errors/webhook-trigger.errors.js';
import { resolveWebhookTriggerOptions } from '../options/resolve-options.js';

/** An in-memory InvocationRepository that counts reads and can run a hook inside a read. */
class FakeInvocationRepository extends InvocationRepository {
  readonly rows = new Map<string, InvocationRecord>();
  reads = 0;
  /** Runs after the row was read and before the read returns: the window a lost wake-up lives in. */
  afterRead?: () => Promise<void>;

  async insert(invocation: NewInvocation): Promise<void> {
    this.rows.set(invocation.id, { ...invocation, status: 'queued', outputs: null, error: null, startedAt: null, finishedAt: null });
  }
  async findById(id: string): Promise<InvocationRecord | null> {
    this.reads++;
    const row = this.rows.get(id);
    const snapshot = row ? { ...row } : null;
    const hook = this.afterRead;
    this.afterRead = undefined;
    await hook?.();
    return snapshot;
  }
  async findByIdempotencyKey(): Promise<InvocationRecord | null> {
    return null;
  }
  async releaseIdempotencyKey(): Promise<void> {}
  async transition(id: string, from: InvocationStatus, to: InvocationStatus, fields: InvocationTransition): Promise<boolean> {
    const row = this.rows.get(id);
    if (!row || row.status !== from) return false;
    Object.assign(row, fields, { status: to });
    return true;
  }
  async markRunning(id: string, startedAt: Date): Promise<InvocationRecord | null> {
    return (await this.transition(id, 'queued', 'running', { startedAt })) ? { ...this.rows.get(id)! } : null;
  }
  async appendOutput(): Promise<boolean> {
    return false;
  }
  async renewLeases(): Promise<void> {}
  async listExpiredLeases(): Promise<InvocationRecord[]> {
    return [];
  }
  async recoverInterrupted(): Promise<boolean> {
    return false;
  }
  async deleteFinishedBefore(): Promise<number> {
    return 0;
  }
  async listQueued(): Promise<Array<Pick<InvocationRecord, 'id' | 'accountId'>>> {
    return [...this.rows.values()].filter((r) => r.status === 'queued').map(({ id, accountId }) => ({ id, accountId }));
  }
  async listByBot(): Promise<InvocationRecord[]> {
    return [...this.rows.values()];
  }
  async countByBotSince(): Promise<number> {
    return 0;
  }
  async lastUsedAt(): Promise<Map<string, Date>> {
    return new Map();
  }
}

const ID = 'inv_AAAAAAAAAAAAAAAAAAAAAA';
const TRIGGER = { id: 'trg_AAAAAAAAAAAAAAAA', accountId: 'acct' };

describe('InvocationWaiter', () => {
  let repo: FakeInvocationRepository;
  let bus: InMemoryClusterBus;
  let waiter: InvocationWaiter;

  /** What the executor does when a run ends: store the outcome, then publish. */
  async function finish(outputs = [{ title: 't', message: 'm' }]): Promise<void> {
    await repo.transition(ID, 'running', 'succeeded', { finishedAt: new Date(), outputs });
    await bus.publish(ID);
  }

  beforeEach(async () => {
    repo = new FakeInvocationRepository();
    bus = new InMemoryClusterBus();
    waiter = new InvocationWaiter(
      repo,
      bus,
      new ShutdownState(SYSTEM_CLOCK),
      SYSTEM_CLOCK,
      resolveWebhookTriggerOptions({ maxSyncWaiters: 3, maxSyncWaitersPerTrigger: 2, maxSyncWaitersPerAccount: 3 }),
    );
    await repo.insert({
      id: ID,
      triggerId: TRIGGER.id,
      botId: 'echo',
      accountId: 'acct',
      inputs: {},
      credits: 1,
      idempotencyKey: null,
      requestHash: null,
      createdAt: new Date(),
    });
    await repo.transition(ID, 'queued', 'running', { startedAt: new Date() });
  });

  it('answers at once for a run that has already finished', async () => {
    await finish();
    const result = await waiter.wait(TRIGGER, ID, 10_000);
    expect(result).toMatchObject({ kind: 'finished', invocation: { status: 'succeeded', outputs: [{ title: 't', message: 'm' }] } });
    expect(bus.waitingIds).toBe(0);
  });

  it('answers not-found for an unknown id or a run of another trigger', async () => {
    expect(await waiter.wait(TRIGGER, 'inv_BBBBBBBBBBBBBBBBBBBBBB', 10_000)).toEqual({ kind: 'not-found' });
    expect(await waiter.wait({ id: 'trg_BBBBBBBBBBBBBBBB', accountId: 'acct' }, ID, 10_000)).toEqual({ kind: 'not-found' });
    expect(bus.waitingIds).toBe(0);
  });

  it('is woken by the bus with the stored outcome, reading the row only twice (no polling)', async () => {
    const t0 = Date.now();
    const waiting = waiter.wait(TRIGGER, ID, 10_000);
    setTimeout(() => void finish([{ title: 'done', message: 'yes' }]), 100);
    const result = await waiting;
    expect(result).toMatchObject({ kind: 'finished', invocation: { status: 'succeeded', outputs: [{ title: 'done', message: 'yes' }] } });
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(repo.reads).toBe(2);
    expect(bus.waitingIds).toBe(0);
  });

  it('loses no wake-up when the run finishes between its subscription and its read', async () => {
    // The read sees "running"; the run finishes and publishes before the read returns.
    repo.afterRead = () => finish([{ title: 'raced', message: 'ok' }]);
    const t0 = Date.now();
    const result = await waiter.wait(TRIGGER, ID, 5_000);
    expect(result).toMatchObject({ kind: 'finished', invocation: { status: 'succeeded', outputs: [{ title: 'raced', message: 'ok' }] } });
    expect(Date.now() - t0).toBeLessThan(1_000); // woken, not timed out
  });

  it('times out with the run still unfinished, and lets go of the bus', async () => {
    const t0 = Date.now();
    const result = await waiter.wait(TRIGGER, ID, 100);
    const elapsed = Date.now() - t0;
    expect(result).toMatchObject({ kind: 'timeout', invocation: { status: 'running' } });
    expect(elapsed).toBeGreaterThanOrEqual(95);
    expect(elapsed).toBeLessThan(1_000);
    expect(bus.waitingIds).toBe(0);
  });

  it('reports a run that finished without a publish (e.g. a lost message) once the timeout re-reads it', async () => {
    const waiting = waiter.wait(TRIGGER, ID, 100);
    await repo.transition(ID, 'running', 'failed', { finishedAt: new Date(), error: { message: 'boom' } });
    expect(await waiting).toMatchObject({ kind: 'finished', invocation: { status: 'failed', error: { message: 'boom' } } });
  });

  it('stops waiting when the signal aborts, and lets go of the bus', async () => {
    const gone = new AbortController();
    const t0 = Date.now();
    const waiting = waiter.wait(TRIGGER, ID, 10_000, gone.signal);
    setTimeout(() => gone.abort(), 50);
    expect(await waiting).toEqual({ kind: 'aborted' });
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(bus.waitingIds).toBe(0);
  });

  it('does not wait at all for a signal that has already aborted', async () => {
    const gone = new AbortController();
    gone.abort();
    expect(await waiter.wait(TRIGGER, ID, 10_000, gone.signal)).toEqual({ kind: 'aborted' });
    expect(bus.waitingIds).toBe(0);
  });

  it('holds a place only while it waits for an unfinished run: a trigger at its share gets 429, the process at its cap 503', async () => {
    const gone = new AbortController();
    const waits = [waiter.wait(TRIGGER, ID, 10_000, gone.signal), waiter.wait(TRIGGER, ID, 10_000, gone.signal)];
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(waiter.held).toBe(2);
    await expect(waiter.wait(TRIGGER, ID, 10_000)).rejects.toThrow(ShareHeldError);
    expect(bus.waitingIds).toBe(1); // the refused one let go of the bus
    // Another trigger of another account still waits, up to the process's cap.
    const queuedRunOf = async (trigger: typeof TRIGGER, id: string) => {
      await repo.insert({
        id,
        triggerId: trigger.id,
        botId: 'echo',
        accountId: trigger.accountId,
        inputs: {},
        credits: 1,
        idempotencyKey: null,
        requestHash: null,
        createdAt: new Date(),
      });
      return id;
    };
    const other = { id: 'trg_BBBBBBBBBBBBBBBB', accountId: 'other' };
    waits.push(waiter.wait(other, await queuedRunOf(other, 'inv_BBBBBBBBBBBBBBBBBBBBBB'), 10_000, gone.signal));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const third = { id: 'trg_CCCCCCCCCCCCCCCC', accountId: 'third' };
    await expect(waiter.wait(third, await queuedRunOf(third, 'inv_CCCCCCCCCCCCCCCCCCCCCC'), 10_000)).rejects.toThrow(ProcessFullError);
    // A finished run answers at once, whatever is held.
    await finish();
    expect(await waiter.wait(TRIGGER, ID, 10_000)).toMatchObject({ kind: 'finished' });
    gone.abort();
    await Promise.all(waits);
    expect(waiter.held).toBe(0);
  });
});
