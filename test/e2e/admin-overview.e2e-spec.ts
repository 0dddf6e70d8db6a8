/**
 * The admin's Overview over real HTTP (docs/admin.md "Overview"): `GET api/overview?window=hour|day` counts the runs
 * the app really ran, by status, with their percentiles and the backlog, on every adapter and database; a bad or
 * repeated window is a 400 in Nest's error shape.
 */
import { WebhookTriggerAdminModule } from '../../src/index.js';
import { ADMIN_TEST_TOKEN, TestAdminGuard } from '../fixtures/admin-guard.js';
import { expectAdminError, ISO, send, startRun, syncUntilFinished, until } from '../helpers/http.js';
import { createTrigger, describeApp, describeOnEveryAdapterAndDatabase, ROOMY_APP } from '../helpers/webhook-app.js';

const AUTH = { Authorization: `Bearer ${ADMIN_TEST_TOKEN}` };

describeOnEveryAdapterAndDatabase('admin Overview', (row) => {
  const s = describeApp(row, {
    ...ROOMY_APP,
    imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [TestAdminGuard] })],
  });
  const overview = (query: string) => send('GET', `${s.app.baseUrl}/admin/api/overview${query}`, { headers: AUTH });

  it('counts the runs finished in the last hour by status, their p50/p95 duration and queue wait, and the backlog now', async () => {
    const echo = await createTrigger(s.app, 'echo');
    const fail = await createTrigger(s.app, 'fail');
    const slow = await createTrigger(s.app, 'slow');
    for (const trigger of [echo, echo, fail]) expect((await syncUntilFinished(trigger, await startRun(trigger))).status).toBe(200);
    const running = await startRun(slow, { ms: 60_000 });
    await until(async () => (await s.app.admin.getInvocationDetail(running, { showInputs: false }))?.status === 'running');

    const res = await overview('');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      window: 'hour',
      from: ISO,
      to: ISO,
      bucketMs: 60_000,
      finished: { succeeded: 2, failed: 1, cancelled: 0, timed_out: 0 },
      backlog: { queued: 0, running: 1 },
      callbacks: { failedDeliveries: 0, retryingDeliveries: 0, disabledCallbacks: 0 },
    });
    expect(res.body.buckets).toHaveLength(60);
    expect(Date.parse(res.body.to) - Date.parse(res.body.from)).toBe(60 * 60_000);
    const counted = res.body.buckets.reduce((sum: number, b: { finished: Record<string, number> }) => sum + b.finished.succeeded, 0);
    expect(counted).toBe(2);
    // Three runs that started and finished within a loose second of their creation.
    for (const field of ['durationMs', 'queueWaitMs']) {
      expect(res.body[field].p50).toBeGreaterThanOrEqual(0);
      expect(res.body[field].p95).toBeGreaterThanOrEqual(res.body[field].p50);
      expect(res.body[field].p95).toBeLessThan(5_000);
    }

    const day = await overview('?window=day');
    expect(day.status).toBe(200);
    expect(day.body).toMatchObject({ window: 'day', bucketMs: 30 * 60_000, finished: { succeeded: 2, failed: 1 } });
    expect(day.body.buckets).toHaveLength(48);
    await s.app.admin.cancelInvocation(running, { showInputs: false });
  });

  it.each(['?window=week', '?window=hour&window=day', '?window[]=hour', '?window[x]=day'])('answers 400 JSON for %s', async (query) => {
    const res = await overview(query);
    expectAdminError(res, 400);
    expect(res.body.message).toMatch(/^window must be /);
  });
});
