/**
 * A worker killed between a run's end and its report, with real processes on one PostgreSQL database and one Redis:
 * a worker of the sample app dies by SIGKILL the moment it would take a run that ended off its account's runs pending
 * (test/fixtures/crash-at-end-report.cjs, preloaded into that process only). The run's outcome is stored; what must
 * not stay is the run in its account's runs pending (its place in line and its share of maxQueuedRuns).
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type Redis from 'ioredis';
import type { Client } from 'pg';
import { eventually, send, triggerBot } from '../helpers/http.js';
import {
  adminApi,
  freePort,
  openProcessServices,
  launchSampleApp,
  startSampleApp,
  within,
  type ProcessServices,
} from '../helpers/sample-app-process.js';
import { serviceUrl } from '../helpers/services.js';

jest.setTimeout(60_000);

const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');
const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');

const ADMIN_TOKEN = 'end-report-crash-admin-token-7c2e4b';
const keyPrefix = `webhook-test:${randomBytes(6).toString('hex')}:`;
const CRASH_AT_END_REPORT = resolve(__dirname, '../fixtures/crash-at-end-report.cjs');
/** BullMQ's lock on a job, and how often a worker looks for jobs whose lock ran out. */
const LEASE_MS = 1500;

if (!postgresUrl || !redisUrl) {
  it.todo('end report crash suite NOT RUN: set WEBHOOK_TEST_POSTGRES_URL=postgres://… and WEBHOOK_TEST_REDIS_URL=redis://…');
} else {
  describe("a worker killed between a run's end and its report (BullMQ runner, real processes)", () => {
    let services: ProcessServices;
    let pg: Client;
    let redis: Redis;

    beforeAll(async () => {
      services = await openProcessServices(postgresUrl, redisUrl, keyPrefix);
      ({ pg, redis } = services);
    });

    afterAll(() => services?.close());

    it('the run keeps its stored outcome and ran once; the next worker takes it off its account’s runs pending', async () => {
      const shared = {
        DATABASE_URL: services.dbUrl,
        REDIS_URL: redisUrl,
        REDIS_KEY_PREFIX: keyPrefix,
        ADMIN_TOKEN,
        WEBHOOK_KEY_SECRET: `end-report-crash-key-secret-${randomBytes(8).toString('hex')}`,
        WEBHOOK_RUN_LEASE_MS: String(LEASE_MS),
      };
      const api = await startSampleApp({ ...shared, WEBHOOK_ROLE: 'api', PORT: String(await freePort()) });
      const created = await adminApi(api, 'POST', '/bots/echo/triggers', { name: 'Crash at end report', type: 'webhook' });
      expect(created.status).toBe(201);
      const trigger = created.body as { id: string; key: string; url: string };
      const pending = `${keyPrefix}pending-runs:demo`;

      const doomed = launchSampleApp({ ...shared, NODE_OPTIONS: `--require ${CRASH_AT_END_REPORT}` }, 'worker');
      const started = await triggerBot(trigger, { hello: 'before the crash' });
      expect(started.status).toBe(200);
      const id = started.body.invocation.id as string;
      expect(await within(doomed.exited, 15_000)).toEqual({ code: null, signal: 'SIGKILL' });

      // Its outcome was stored before the report; the run is still among its account's runs pending.
      const status = async () =>
        (await pg.query<{ status: string }>('SELECT status FROM webhook_invocations WHERE id = $1', [id])).rows[0].status;
      expect(await status()).toBe('succeeded');
      expect(await redis.sismember(pending, id)).toBe(1);

      // The next worker: within a few of its stalled-job checks the run is off its account's runs pending (before: it
      // stayed for the account's next 10 idle minutes), and it did not run again.
      const next = await startSampleApp(shared, 'worker');
      await eventually("the run to leave its account's runs pending", 4 * LEASE_MS + 2_000, async () =>
        (await redis.exists(pending)) === 0 ? true : undefined,
      );
      expect(await status()).toBe('succeeded');
      const synced = await send('GET', `${api.base}/webhooks/${trigger.id}/trigger/invocation/${id}/sync`, {
        headers: { 'X-Key': trigger.key },
      });
      expect(synced.body).toEqual({ success: true, outputs: [{ title: 'hello', message: 'before the crash' }] });
      const runs = (output: string) => output.split('\n').filter((line) => line.includes(`${id} running`)).length;
      expect(runs(doomed.output()) + runs(next.output())).toBe(1);
    });
  });
}
