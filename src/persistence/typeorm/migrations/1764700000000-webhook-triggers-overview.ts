import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The admin's Overview (docs/admin.md): each of its reads is a range of one indexed time column, so it stays fast
 * on millions of runs however old most of them are.
 *
 * - runs finished in the window, by status, and their durations: `(finished_at, status, started_at)`, which holds
 *   every column those reads need (an index-only scan on PostgreSQL);
 * - queue waits of the runs started in the window: `(started_at, created_at)`;
 * - deliveries that failed for good in the window: `(status, last_attempt_at)`.
 *
 * The backlog counts read the existing `(status, lease_expires_at)`. On PostgreSQL each CREATE INDEX blocks
 * writes to its table while it builds (about a second per million rows here; see WebhookTriggersHistory).
 */
export class WebhookTriggersOverview1764700000000 implements MigrationInterface {
  name = 'WebhookTriggersOverview1764700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_invocations_finished_status_started" ON "webhook_invocations" ("finished_at", "status", "started_at")`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_webhook_invocations_started_created" ON "webhook_invocations" ("started_at", "created_at")`);
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_callback_deliveries_status_last_attempt" ON "webhook_callback_deliveries" ("status", "last_attempt_at")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_callback_deliveries_status_last_attempt"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_invocations_started_created"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_invocations_finished_status_started"`);
  }
}
