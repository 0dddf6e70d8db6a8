import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Run lifecycle: who runs a run and until when (a lease the owner renews, so recovery never touches a
 * run a live process still holds), the request's hash for idempotency, and indexes for recovery and
 * retention.
 */
export class WebhookTriggersLifecycle1763900000000 implements MigrationInterface {
  name = 'WebhookTriggersLifecycle1763900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_invocations" ADD COLUMN "owner" varchar(100)`);
    await queryRunner.query(`ALTER TABLE "webhook_invocations" ADD COLUMN "lease_expires_at" bigint`);
    await queryRunner.query(`ALTER TABLE "webhook_invocations" ADD COLUMN "request_hash" varchar(64)`);
    await queryRunner.query(`CREATE INDEX "IDX_webhook_invocations_status_lease" ON "webhook_invocations" ("status", "lease_expires_at")`);
    await queryRunner.query(`CREATE INDEX "IDX_webhook_invocations_created" ON "webhook_invocations" ("created_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_invocations_created"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_invocations_status_lease"`);
    await queryRunner.query(`ALTER TABLE "webhook_invocations" DROP COLUMN "request_hash"`);
    await queryRunner.query(`ALTER TABLE "webhook_invocations" DROP COLUMN "lease_expires_at"`);
    await queryRunner.query(`ALTER TABLE "webhook_invocations" DROP COLUMN "owner"`);
  }
}
