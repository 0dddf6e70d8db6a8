/**
 * The audit log over real HTTP (docs/security.md "Audit log"): every admin change and key view recorded with the
 * principal the host's guard put on the request, listed and filtered through the admin API (bad or repeated
 * query parameters are 400s), hosts' own calls named with AuditContext.run, and retention on the module's Clock.
 */
import { AuditContext, WebhookTriggerAdminModule } from '../../src/index.js';
import { HistoryRetention } from '../../src/lifecycle/history-retention.js';
import { UserAdminGuard, userAuth } from '../fixtures/admin-guard.js';
import { ManualClock } from '../fakes/manual-clock.js';
import { expectAdminError, send, startRun, syncUntilFinished, triggerBot } from '../helpers/http.js';
import {
  ADAPTERS,
  createTrigger,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  type TestTrigger,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';

const ADA = userAuth('ada');
const DAY_MS = 24 * 60 * 60 * 1000;

interface Entry {
  action: string;
  principal: string | null;
  triggerId: string | null;
  invocationId: string | null;
  accountId: string | null;
  details: Record<string, unknown>;
}

describeOnEveryAdapterAndDatabase('audit log', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;
  let api: string;
  const call = (method: string, path: string, json?: unknown, headers = ADA) => send(method, `${api}${path}`, { headers, json });
  const auditLog = async (query = '', headers = ADA) => {
    const res = await call('GET', `/audit-log${query}`, undefined, headers);
    expect(res.status).toBe(200);
    return res.body as { entries: Entry[]; next: string | null };
  };

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      database,
      options: {
        keySecret: 'audit-log-test-secret-0123456789',
        accounts: { acct: { credits: 1000 } },
        callbackAllowedHosts: ['127.0.0.1'],
      },
      imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [UserAdminGuard] })],
    });
    api = `${t.baseUrl}/admin/api`;
  });
  afterAll(() => t.close());

  it("records each admin change and key view with the principal the host's guard set, newest first, and never a key or secret", async () => {
    const created = await call('POST', '/bots/echo/triggers', { name: 'Audited' });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const key: string = created.body.key;
    expect((await call('GET', `/triggers/${id}`)).body.key).toBe(key); // a plain key shown: a key view
    const rotated = await call('POST', `/triggers/${id}/rotate-key`);
    expect((await call('PUT', `/triggers/${id}/allowed-ips`, { allowedIps: ['127.0.0.1'] })).status).toBe(200);
    const hook = 'http://127.0.0.1:9/hooks/runs?token=hook-token-secret';
    const callback = await call('PUT', `/triggers/${id}/callback`, { url: hook });
    expect((await call('PUT', `/triggers/${id}/callback`, { url: hook, events: ['invocation.started'] })).status).toBe(200);
    const secret = await call('POST', `/triggers/${id}/callback/rotate-secret`);
    expect((await call('DELETE', `/triggers/${id}/callback`)).status).toBe(204);
    expect((await call('PUT', '/accounts/acct/credits', { credits: 500 })).status).toBe(200);

    const runs: TestTrigger = { id, key: rotated.body.key, botId: 'echo', url: rotated.body.url };
    const finished = await startRun(runs, { n: 1 });
    await syncUntilFinished(runs, finished);
    const replayed = await call('POST', `/invocations/${finished}/replay`);
    expect(replayed.status).toBe(201);
    const slow = await createTrigger(t, 'slow');
    const running = await startRun(slow, { ms: 60_000 });
    expect((await call('POST', `/invocations/${running}/cancel`)).status).toBe(200);
    expect((await call('DELETE', `/triggers/${id}`)).status).toBe(204);

    const { entries } = await auditLog(`?triggerId=${id}`);
    expect(entries.map((e) => e.action)).toEqual([
      'trigger.deleted',
      'invocation.replayed',
      'callback.deleted',
      'callback.secret_rotated',
      'callback.changed',
      'callback.created',
      'trigger.allowed_ips_set',
      'trigger.key_rotated',
      'trigger.key_viewed',
      'trigger.created',
    ]);
    expect(entries.every((e) => e.principal === 'user-ada')).toBe(true);
    expect(entries.find((e) => e.action === 'trigger.created')).toMatchObject({
      accountId: 'acct',
      details: { botId: 'echo', name: 'Audited' },
    });
    expect(entries.find((e) => e.action === 'callback.created')?.details).toEqual({
      origin: 'http://127.0.0.1:9',
      events: 'invocation.completed',
    });
    expect(entries.find((e) => e.action === 'invocation.replayed')).toMatchObject({
      invocationId: replayed.body.id,
      details: { replayOf: finished },
    });
    const cancelled = (await auditLog('?action=invocation.cancelled')).entries[0];
    expect(cancelled).toMatchObject({ invocationId: running, triggerId: slow.id, accountId: 'acct', principal: 'user-ada' });
    const credits = (await auditLog('?action=credits.set')).entries[0];
    expect(credits).toMatchObject({ accountId: 'acct', principal: 'user-ada', details: { credits: 500 } });

    const everything = JSON.stringify(await auditLog('?limit=200'));
    for (const secretValue of [key, rotated.body.key, callback.body.secret, secret.body.secret, 'hook-token-secret']) {
      expect(typeof secretValue).toBe('string');
      expect(everything).not.toContain(secretValue);
    }
  });

  it("records a trigger's keys added and revoked one by one, by key id and never the key", async () => {
    const trigger = await createTrigger(t);
    const added = await call('POST', `/triggers/${trigger.id}/keys`, { label: 'CI' });
    expect(added.status).toBe(201);
    expect((await call('DELETE', `/triggers/${trigger.id}/keys/${added.body.id}`)).status).toBe(204);
    const { entries } = await auditLog(`?triggerId=${trigger.id}`);
    expect(entries.map((e) => [e.action, e.principal, e.details])).toEqual([
      ['trigger.key_revoked', 'user-ada', { keyId: added.body.id }],
      ['trigger.key_created', 'user-ada', { keyId: added.body.id }],
      ['trigger.created', null, { botId: 'echo', name: 'echo trigger' }],
    ]);
    expect(JSON.stringify(entries)).not.toContain(added.body.key);
  });

  it('filters by action, principal and trigger, and pages by cursor', async () => {
    const trigger = await createTrigger(t);
    for (const name of ['bob', 'cy', 'bob']) {
      expect((await call('POST', `/triggers/${trigger.id}/rotate-key`, undefined, userAuth(name))).status).toBe(200);
    }
    const bobs = await auditLog(`?principal=user-bob&triggerId=${trigger.id}`);
    expect(bobs.entries.map((e) => [e.action, e.principal])).toEqual([
      ['trigger.key_rotated', 'user-bob'],
      ['trigger.key_rotated', 'user-bob'],
    ]);
    const rotations = `?action=trigger.key_rotated&triggerId=${trigger.id}`;
    const page1 = await auditLog(`${rotations}&limit=2`);
    expect(page1.entries.map((e) => e.principal)).toEqual(['user-bob', 'user-cy']);
    expect(page1.next).toEqual(expect.any(String));
    const page2 = await auditLog(`${rotations}&limit=2&cursor=${encodeURIComponent(page1.next!)}`);
    expect(page2).toEqual({ entries: [expect.objectContaining({ principal: 'user-bob' })], next: null });
    expect((await auditLog(`?action=trigger.created&triggerId=${trigger.id}`)).entries).toHaveLength(1);
    expect((await auditLog(`?from=2999-01-01T00:00:00Z`)).entries).toEqual([]);
  });

  it.each([
    ['a repeated action', '?action=trigger.created&action=trigger.deleted', 'action must be given once'],
    ['a repeated principal', '?principal=a&principal=b', 'principal must be given once'],
    ['an unknown action', '?action=trigger.exploded', 'action must be one of'],
    ['a limit too large', '?limit=201', 'limit must be a whole number from 1 to 200'],
    ['a limit that is not a number', '?limit=ten', 'limit must be'],
    ['a time that is not one', '?from=yesterday', 'from must be an ISO 8601 time'],
    ['a cursor that is not one', '?cursor=nope', 'cursor must be'],
  ])('answers 400 for %s, never a 500', async (_case, query, message) => {
    const res = await call('GET', `/audit-log${query}`);
    expectAdminError(res, 400);
    expect(res.body.message).toContain(message);
  });

  it('names the caller of AuditContext.run when the host calls the admin service itself, and nobody outside it', async () => {
    const trigger = await createTrigger(t);
    await AuditContext.run('nightly-rotation-job', () => t.admin.rotateKey(trigger.id));
    await t.admin.deleteTrigger(trigger.id);
    const { entries } = await auditLog(`?triggerId=${trigger.id}`);
    expect(entries.map((e) => [e.action, e.principal])).toEqual([
      ['trigger.deleted', null],
      ['trigger.key_rotated', 'nightly-rotation-job'],
      ['trigger.created', null],
    ]);
  });

  it('records nothing for a refused change', async () => {
    const trigger = await createTrigger(t);
    const creditChanges = (await auditLog('?action=credits.set')).entries.length;
    expectAdminError(await call('PUT', `/triggers/${trigger.id}/allowed-ips`, { allowedIps: ['nope'] }), 400);
    expectAdminError(await call('PUT', '/accounts/acct/credits', { credits: -1 }), 400);
    expect((await auditLog(`?triggerId=${trigger.id}`)).entries.map((e) => e.action)).toEqual(['trigger.created']);
    expect((await auditLog('?action=credits.set')).entries).toHaveLength(creditChanges);
  });
});

describe.each(ADAPTERS)('audit log settings on %s', (_adapterName, makeAdapter) => {
  let t: WebhookTestApp;
  const clock = new ManualClock(Date.UTC(2026, 0, 1));

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      options: { auditRetentionDays: 30, historyRetentionDays: 0, accounts: { acct: { credits: 100 } } },
      extras: { clock },
      imports: [
        WebhookTriggerAdminModule.forRoot({
          path: 'admin',
          guards: [UserAdminGuard],
          auditPrincipal: (request: { headers: Record<string, string | undefined> }) => request.headers['x-operator'],
        }),
      ],
    });
  });
  afterAll(() => t.close());

  it("names whom the host's auditPrincipal returns", async () => {
    const headers = { ...ADA, 'X-Operator': 'ops@example.com' };
    const created = await send('POST', `${t.baseUrl}/admin/api/bots/echo/triggers`, { headers, json: { name: 'x' } });
    const res = await send('GET', `${t.baseUrl}/admin/api/audit-log?triggerId=${created.body.id}`, { headers: ADA });
    expect(res.body.entries).toEqual([expect.objectContaining({ action: 'trigger.created', principal: 'ops@example.com' })]);
  });

  it('deletes entries older than auditRetentionDays on the clock, and keeps the younger ones', async () => {
    const old = await createTrigger(t);
    clock.advance(1);
    const young = await createTrigger(t); // 1 ms younger: exactly auditRetentionDays old at the sweep, so kept
    clock.advance(30 * DAY_MS);
    await expect(t.app.get(HistoryRetention).sweepAudit()).resolves.toBeGreaterThanOrEqual(1);
    expect((await t.admin.listAuditLog({ triggerId: old.id })).entries).toEqual([]);
    expect((await t.admin.listAuditLog({ triggerId: young.id })).entries).toHaveLength(1);
    // The triggers themselves are untouched: only their entries aged out.
    expect((await triggerBot(old)).status).toBe(200);
  });
});
