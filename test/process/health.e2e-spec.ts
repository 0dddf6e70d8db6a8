/**
 * Health as an operator sees it, on real processes: the sample app's `GET /health` on a PostgreSQL and a Redis
 * of the test's own, down naming `database` while PostgreSQL is killed and up once it is back, down naming
 * `redis` once Redis is killed; and the main entry, which starts and probes with `@nestjs/terminus` missing.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { send, until } from '../helpers/http.js';
import { PrivatePostgres, RedisServer, freePort } from '../helpers/private-services.js';
import { killSampleApps, startSampleApp, type SampleAppProcess } from '../helpers/sample-app-process.js';

jest.setTimeout(60_000);

const ROOT = resolve(__dirname, '../..');

describe('the sample app /health on a PostgreSQL and a Redis the test kills', () => {
  let pg: PrivatePostgres;
  let redis: RedisServer;
  let app: SampleAppProcess;
  const health = () => send('GET', `${app.base}/health`);

  beforeAll(async () => {
    pg = await PrivatePostgres.create();
    redis = new RedisServer(await freePort(), mkdtempSync(join(tmpdir(), 'webhook-redis-')));
    await redis.start();
    app = await startSampleApp({
      PORT: String(await freePort()),
      DATABASE_URL: pg.url,
      REDIS_URL: redis.url,
      ADMIN_TOKEN: 'health-e2e-admin-token-0123',
      WEBHOOK_KEY_SECRET: 'health-e2e-key-secret-0123456789',
    });
  });

  afterAll(async () => {
    await killSampleApps();
    await pg?.remove();
    await redis?.kill();
  });

  it('up with database, redis and backlog; PostgreSQL killed → 503 naming database; back → 200; Redis killed → 503 naming redis', async () => {
    const up = await health();
    expect(up.status).toBe(200);
    expect(up.body.details.webhooks).toMatchObject({
      status: 'up',
      database: { status: 'up' },
      redis: { status: 'up' },
      backlog: { status: 'up' },
    });

    await pg.kill();
    const noDatabase = await health();
    expect(noDatabase.status).toBe(503);
    expect(noDatabase.body.error.webhooks.database).toEqual({ status: 'down', error: expect.any(String) });
    expect(noDatabase.body.error.webhooks.redis.status).toBe('up');

    await pg.start();
    await until(async () => (await health()).status === 200, 10_000, 'GET /health answering 200 once PostgreSQL is back');

    await redis.kill();
    const noRedis = await health();
    expect(noRedis.status).toBe(503);
    expect(noRedis.body.error.webhooks.redis).toEqual({ status: 'down', error: expect.stringContaining('BullMqBotRunner') });
    expect(noRedis.body.error.webhooks.database.status).toBe('up');
  });
});

describe('the main entry without @nestjs/terminus installed', () => {
  it('starts and answers its probes; only the terminus subpath needs the package', async () => {
    // The library as the sample app's build compiled it (test/global-setup.ts), in a plain node process.
    const script = `
      const lib = require(${JSON.stringify(join(ROOT, 'sample-app/dist/src/index.js'))});
      const { Module } = require('@nestjs/common');
      const { NestFactory } = require('@nestjs/core');
      class App {}
      Module({ imports: [lib.WebhookTriggerModule.forRoot({ storage: new lib.InMemoryWebhookStorage() })] })(App);
      (async () => {
        const app = await NestFactory.createApplicationContext(App, { logger: false });
        const health = await app.get(lib.WebhookTriggerProbes).check();
        let subpath = 'loaded';
        try { require(${JSON.stringify(join(ROOT, 'sample-app/dist/src/terminus/index.js'))}); } catch (e) { subpath = e.message; }
        await app.close();
        process.stdout.write(JSON.stringify({ health, subpath }));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-r', join(ROOT, 'test/fixtures/without-terminus.cjs'), '-e', script], {
      cwd: ROOT,
    });
    const { health, subpath } = JSON.parse(stdout);
    expect(health).toEqual({
      status: 'up',
      checks: { database: { status: 'up', latencyMs: expect.any(Number) }, backlog: { status: 'up', queued: 0, max: 10_000 } },
    });
    expect(subpath).toContain("Cannot find module '@nestjs/terminus'");
  });
});
