/**
 * The health endpoint of a host on @nestjs/terminus (the sample app's HealthModule, with the
 * `nestjs-webhook-triggers/terminus` indicator): 200 with each check while the node can serve; 503 naming
 * `backlog` once `maxQueuedRuns` runs wait to start (those waiting to be dispatched again included), and 200
 * again once they have.
 */
import { HealthModule } from '../../sample-app/src/health/health.module.js';
import { UnreachableQueueRunner } from '../fixtures/unreachable-runner.js';
import { cancelRun, expectError, send, startRun, syncInvocation, triggerBot } from '../helpers/http.js';
import { UNTHROTTLED, createTrigger, describeApp, describeOnEveryAdapter } from '../helpers/webhook-app.js';

const MAX_QUEUED = 2;

describeOnEveryAdapter('health endpoint (terminus)', (row) => {
  const ctx = describeApp(row, {
    options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 1, maxQueuedRuns: MAX_QUEUED, shutdownGraceMs: 0 },
    imports: [HealthModule],
  });
  const health = () => send('GET', `${ctx.app.baseUrl}/health`);

  it('is up with the database and the backlog checked (no Redis, no workers in one process)', async () => {
    const res = await health();
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ok');
    expect(res.body.details.webhooks).toEqual({
      status: 'up',
      database: { status: 'up', latencyMs: expect.any(Number) },
      backlog: { status: 'up', queued: 0, max: MAX_QUEUED },
    });
  });

  it(`is down naming backlog (503) while ${MAX_QUEUED} runs wait to start, and up again once they started`, async () => {
    const slow = await createTrigger(ctx.app, 'slow');
    const holder = await startRun(slow, { ms: 60_000 });
    const waiting = [await startRun(slow, { ms: 10, i: 1 }), await startRun(slow, { ms: 10, i: 2 })];

    const down = await health();
    expect(down.status).toBe(503);
    expect(down.body.status).toBe('error');
    expect(down.body.error.webhooks.backlog).toEqual({
      status: 'down',
      queued: MAX_QUEUED,
      max: MAX_QUEUED,
      error: `${MAX_QUEUED} run(s) waiting to start, at or over maxQueuedRuns (${MAX_QUEUED}): triggers are answered 503`,
    });
    expect(down.body.error.webhooks.database.status).toBe('up');

    expect((await cancelRun(slow, holder)).status).toBe(200);
    for (const id of waiting) expect((await syncInvocation(slow, id)).body).toMatchObject({ success: true });
    const up = await health();
    expect(up.status).toBe(200);
    expect(up.body.details.webhooks.backlog).toEqual({ status: 'up', queued: 0, max: MAX_QUEUED });
  });

  describe('with a runner whose dispatch throws', () => {
    const unreachable = describeApp(row, {
      options: { rateLimits: UNTHROTTLED, maxQueuedRuns: MAX_QUEUED, shutdownGraceMs: 0 },
      extras: { runner: UnreachableQueueRunner },
      imports: [HealthModule],
    });

    it('is down naming backlog while the runs waiting to be dispatched again fill maxQueuedRuns, as triggers are refused 503', async () => {
      const echo = await createTrigger(unreachable.app, 'echo');
      for (let i = 0; i < MAX_QUEUED; i++) await startRun(echo, { i });
      expectError(await triggerBot(echo, { i: MAX_QUEUED }), 503);

      const down = await send('GET', `${unreachable.app.baseUrl}/health`);
      expect(down.status).toBe(503);
      expect(down.body.error.webhooks.backlog).toMatchObject({ status: 'down', queued: MAX_QUEUED, max: MAX_QUEUED });
    });
  });
});
