import { Logger } from '@nestjs/common';
import { createWebhookFakes } from '../../test/fakes/webhook-fakes.js';
import { HistoryRetention } from './history-retention.js';
import { ManualClock } from '../../test/fakes/manual-clock.js';
import { ShutdownState } from './shutdown.state.js';
import { SYSTEM_CLOCK } from '../time/clock.js';

describe('HistoryRetention', () => {
  const failingStore = () => {
    const f = createWebhookFakes({ historyRetentionDays: 30 });
    jest.spyOn(f.invocations, 'deleteFinishedBefore').mockRejectedValue(new Error('The database connection is not open'));
    return f;
  };

  afterEach(() => jest.restoreAllMocks());

  it('keeps runs younger than historyRetentionDays and deletes the finished ones older', async () => {
    const f = createWebhookFakes({ historyRetentionDays: 30 });
    const now = Date.UTC(2026, 5, 1);
    const daysAgo = (days: number) => new Date(now - days * 24 * 60 * 60 * 1000);
    for (const [id, days] of [
      ['inv_old', 30.01],
      ['inv_young', 29.99],
    ] as const) {
      await f.invocations.insert({
        id,
        triggerId: 'trg_AAAAAAAAAAAAAAAA',
        botId: 'echo',
        accountId: 'acct',
        inputs: {},
        credits: 1,
        idempotencyKey: null,
        requestHash: null,
        createdAt: daysAgo(days),
      });
      await f.invocations.transition(id, 'queued', 'cancelled', { finishedAt: daysAgo(days) });
    }
    await expect(
      new HistoryRetention(f.invocations, new ShutdownState(SYSTEM_CLOCK), f.options, f.callbacks, f.storage.audit, f.clock).sweep(now),
    ).resolves.toBe(1);
    expect(await f.invocations.findById('inv_old')).toBeNull();
    expect(await f.invocations.findById('inv_young')).toMatchObject({ status: 'cancelled' });
  });

  it('logs a failed sweep as an error while the app runs', async () => {
    const f = failingStore();
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    await expect(
      new HistoryRetention(f.invocations, new ShutdownState(SYSTEM_CLOCK), f.options, f.callbacks, f.storage.audit, f.clock).sweep(),
    ).resolves.toBe(0);
    expect(error).toHaveBeenCalledWith('History retention failed; retrying in an hour', expect.stringContaining('not open'));
  });

  it('says nothing when the sweep was cut off by the app shutting down (the database closed under it)', async () => {
    const f = failingStore();
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const shutdown = new ShutdownState(SYSTEM_CLOCK);
    shutdown.begin();
    await expect(new HistoryRetention(f.invocations, shutdown, f.options, f.callbacks, f.storage.audit, f.clock).sweep()).resolves.toBe(0);
    expect(error).not.toHaveBeenCalled();
  });

  describe('of the audit log', () => {
    const DAY_MS = 24 * 60 * 60 * 1000;
    const now = Date.UTC(2026, 5, 1);
    async function logWithEntries(auditRetentionDays: number) {
      const f = createWebhookFakes({ auditRetentionDays });
      for (const [n, days] of [
        [1, 10.01],
        [2, 9.99],
      ] as const) {
        await f.storage.audit.append({
          id: `aud_${String(n).padStart(32, '0')}`,
          at: new Date(now - days * DAY_MS),
          action: 'trigger.key_rotated',
          triggerId: null,
          invocationId: null,
          accountId: null,
          principal: null,
          details: {},
        });
      }
      const retention = new HistoryRetention(
        f.invocations,
        new ShutdownState(SYSTEM_CLOCK),
        f.options,
        f.callbacks,
        f.storage.audit,
        new ManualClock(now),
      );
      return { f, retention };
    }

    it('deletes entries older than auditRetentionDays by the clock it is given', async () => {
      const { f, retention } = await logWithEntries(10);
      await expect(retention.sweepAudit()).resolves.toBe(1);
      expect((await f.storage.audit.list({ limit: 10 })).map((e) => e.id)).toEqual([`aud_${'0'.repeat(31)}2`]);
    });

    it('keeps every entry with auditRetentionDays 0', async () => {
      const { f, retention } = await logWithEntries(0);
      await expect(retention.sweepAudit()).resolves.toBe(0);
      expect(await f.storage.audit.list({ limit: 10 })).toHaveLength(2);
    });
  });
});
