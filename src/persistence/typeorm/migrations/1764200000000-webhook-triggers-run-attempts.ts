import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How many times each run was claimed (`queued → running`), counted in the claim's own statement, so a
 * process that dies while running a run has already counted that attempt, once. Recovery reads it to stop
 * restarting a `retryInterrupted` run that keeps losing its process (`maxRunAttempts`). Existing rows
 * start at 0; a NOT NULL column with a constant default is added without rewriting the table on both
 * databases (PostgreSQL 11+ stores the default in the catalog).
 */
export class WebhookTriggersRunAttempts1764200000000 implements MigrationInterface {
  name = 'WebhookTriggersRunAttempts1764200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_invocations" ADD COLUMN "attempts" integer NOT NULL DEFAULT 0`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_invocations" DROP COLUMN "attempts"`);
  }
}
