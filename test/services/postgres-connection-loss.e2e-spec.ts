/**
 * A unit of work whose PostgreSQL connection dies under it (its backend terminated, as a restarted server or
 * `pg_terminate_backend` does): the caller gets the error that says so, not the rollback's own failure on a
 * connection TypeORM already released, so the webhook API answers 503 (retry), not 500; and the pool serves
 * the next unit on a fresh connection. Also: what node-postgres itself throws for a terminated backend is
 * recognised as a lost connection (the webhook API's 503 for single statements outside a unit of work).
 */
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Client } from 'pg';
import { WebhookTriggerModule } from '../../src/index.js';
import { httpStatusOf } from '../../src/errors/error-status.js';
import { isDatabaseUnavailable } from '../../src/persistence/sql/database-errors.js';
import { DatabaseConnectionLostError } from '../../src/errors/webhook-trigger.errors.js';
import { EchoBot } from '../fixtures/bots.js';
import { sqlExecutorOf } from '../helpers/db.js';
import { createScratchDatabase, serviceUrl } from '../helpers/services.js';

const baseUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

if (!baseUrl) {
  it.todo('PostgreSQL connection-loss suite NOT RUN: set WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test');
} else {
  describe('a unit of work on PostgreSQL whose connection is terminated', () => {
    let db: { url: string; drop: () => Promise<void> };
    let app: INestApplication;

    beforeAll(async () => {
      db = await createScratchDatabase(baseUrl);
      const moduleRef = await Test.createTestingModule({
        imports: [WebhookTriggerModule.forRoot({ database: { type: 'postgres', url: db.url }, shutdownGraceMs: 0 })],
        providers: [EchoBot],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
    });

    afterAll(async () => {
      await app?.close();
      await db?.drop();
    });

    const outcome = (promise: Promise<unknown>) =>
      promise.then(
        () => null,
        (e: unknown) => e,
      );

    it('killed between two statements: rejects with DatabaseConnectionLostError (503), not the released runner; the next unit works', async () => {
      const executor = sqlExecutorOf(app);
      const admin = new Client({ connectionString: db.url });
      await admin.connect();
      try {
        const thrown = await outcome(
          executor.run(async (tx) => {
            const pid = (await executor.read('SELECT pg_backend_pid() AS pid', [], tx)).rows[0].pid as number;
            await admin.query('SELECT pg_terminate_backend($1)', [pid]);
            // TypeORM hears the connection's error event and releases the runner by itself.
            await new Promise((r) => setTimeout(r, 200));
            await executor.write('SELECT 1', [], tx);
            return 'committed';
          }),
        );
        expect(thrown).toBeInstanceOf(DatabaseConnectionLostError);
        expect(httpStatusOf(thrown)).toBe(503);
        expect(await executor.run(async (tx) => (await executor.read('SELECT 41 + 1 AS n', [], tx)).rows)).toEqual([{ n: 42 }]);
      } finally {
        await admin.end();
      }
    });

    it('killed by its own statement: rejects with the lost connection (503 material); the next unit works', async () => {
      const executor = sqlExecutorOf(app);
      const thrown = await outcome(
        executor.run(async (tx) => {
          await executor.read('SELECT 1', [], tx);
          await executor.write('SELECT pg_terminate_backend(pg_backend_pid())', [], tx);
          return 'committed';
        }),
      );
      // The storage names it (the driver's error is its cause): a 503 whatever the driver said.
      expect(thrown).toBeInstanceOf(DatabaseConnectionLostError);
      expect(httpStatusOf(thrown)).toBe(503);
      expect(isDatabaseUnavailable((thrown as Error).cause)).toBe(true);
      expect(await executor.run(async (tx) => (await executor.read('SELECT 41 + 1 AS n', [], tx)).rows)).toEqual([{ n: 42 }]);
    });

    it('node-postgres errors of a terminated backend (mid-query, then on the dead client) count as a lost connection', async () => {
      const victim = new Client({ connectionString: db.url });
      const admin = new Client({ connectionString: db.url });
      victim.on('error', () => undefined);
      await Promise.all([victim.connect(), admin.connect()]);
      try {
        const pid = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        const sleeping = outcome(victim.query('SELECT pg_sleep(5)'));
        await new Promise((r) => setTimeout(r, 100));
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        expect(isDatabaseUnavailable(await sleeping)).toBe(true);
        expect(isDatabaseUnavailable(await outcome(victim.query('SELECT 1')))).toBe(true);
      } finally {
        await Promise.allSettled([victim.end(), admin.end()]);
      }
    });
  });
}
