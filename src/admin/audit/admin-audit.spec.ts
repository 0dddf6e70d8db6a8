import { Logger } from '@nestjs/common';
import { ManualClock } from '../../../test/fakes/manual-clock.js';
import { AuditLog, type AuditEntry, type AuditQuery } from '../../persistence/audit-log.js';
import { InMemoryWebhookStorage } from '../../persistence/memory/in-memory-webhook-storage.js';
import { AdminAudit } from './admin-audit.js';
import { AuditContext, principalFromUser } from './audit-context.js';

/** An audit log whose database is gone: every append fails. */
class UnreachableAuditLog extends AuditLog {
  append(_entry: AuditEntry): Promise<void> {
    return Promise.reject(new Error('Connection terminated unexpectedly'));
  }
  list(_query: AuditQuery): Promise<AuditEntry[]> {
    return Promise.resolve([]);
  }
  deleteOlderThan(): Promise<number> {
    return Promise.resolve(0);
  }
}

describe('AdminAudit', () => {
  afterEach(() => jest.restoreAllMocks());

  it('records the principal of AuditContext.run, the time of its clock, and bounded details', async () => {
    const storage = new InMemoryWebhookStorage();
    const audit = new AdminAudit(storage.audit, new ManualClock(Date.UTC(2026, 0, 2)));
    await AuditContext.run('ada', () =>
      audit.triggerCreated({ id: 'trg_AAAAAAAAAAAAAAAA', accountId: 'acct', botId: 'echo', name: 'x'.repeat(500) }),
    );
    await audit.callbackSet('trg_AAAAAAAAAAAAAAAA', true, 'https://user:pw@hooks.example.com/path?token=t0k3n', ['invocation.completed']);
    const entries = await storage.audit.list({ limit: 10 });
    // Both at the same instant of the clock: told apart by action, not by order.
    const created = entries.find((e) => e.action === 'trigger.created')!;
    const callback = entries.find((e) => e.action === 'callback.created')!;
    expect(created).toMatchObject({ action: 'trigger.created', principal: 'ada', at: new Date(Date.UTC(2026, 0, 2)) });
    expect(created.details.name).toHaveLength(200);
    expect(callback).toMatchObject({ action: 'callback.created', principal: null, details: { origin: 'https://hooks.example.com' } });
    expect(JSON.stringify(callback)).not.toMatch(/t0k3n|pw@|\/path/);
  });

  it('logs a failed write as an error naming the action, and lets the change stand (no rejection)', async () => {
    const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const audit = new AdminAudit(new UnreachableAuditLog(), new ManualClock(0));
    await expect(audit.keyRotated('trg_AAAAAAAAAAAAAAAA')).resolves.toBeUndefined();
    expect(error).toHaveBeenCalledWith(
      'Audit log: the change was made but its entry (trigger.key_rotated) could not be stored: Connection terminated unexpectedly',
    );
  });
});

describe('principalFromUser (the default auditPrincipal)', () => {
  it.each([
    [{ user: { id: 7, username: 'ada' } }, '7'],
    [{ user: { username: 'ada', email: 'ada@example.com' } }, 'ada'],
    [{ user: { email: 'ada@example.com', sub: 'auth0|1' } }, 'ada@example.com'],
    [{ user: { sub: 'auth0|1' } }, 'auth0|1'],
    [{ user: { name: 'Ada Lovelace' } }, 'Ada Lovelace'],
    [{ user: 'ada' }, 'ada'],
    [{ user: { id: '  \u0000\n ', name: 'ada\u0007' } }, 'ada'],
    [{ user: { roles: ['admin'] } }, null],
    [{}, null],
    [null, null],
  ])('%j → %j', (request, principal) => {
    expect(principalFromUser(request)).toBe(principal);
  });

  it('cuts a principal to 200 characters', () => {
    expect(principalFromUser({ user: { id: 'x'.repeat(300) } })).toHaveLength(200);
  });
});
