import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Access (docs/security.md): a trigger's IP allow-list, and the audit log of admin changes and key views.
 *
 * - `webhook_triggers.allowed_ips`: a JSON list of addresses and CIDRs; NULL (every existing trigger) lets every
 *   address in. A nullable column is added without rewriting the table on both databases.
 * - `webhook_audit_log`: one row per admin change or key view. `details` is a small JSON object (bounded by the
 *   writer; never a key or a secret). Listed newest first by `(at, id)`, optionally for one trigger, and cut by
 *   retention on `at`: the two indexes serve those.
 */
export class WebhookTriggersAudit1764500000000 implements MigrationInterface {
  name = 'WebhookTriggersAudit1764500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_triggers" ADD COLUMN "allowed_ips" text`);
    await queryRunner.query(`CREATE TABLE "webhook_audit_log" (
      "id" varchar(40) PRIMARY KEY NOT NULL,
      "at" bigint NOT NULL,
      "action" varchar(60) NOT NULL,
      "trigger_id" varchar(40),
      "invocation_id" varchar(40),
      "account_id" varchar(200),
      "principal" varchar(200),
      "details" varchar(2000) NOT NULL)`);
    await queryRunner.query(`CREATE INDEX "IDX_webhook_audit_log_at_id" ON "webhook_audit_log" ("at", "id")`);
    await queryRunner.query(`CREATE INDEX "IDX_webhook_audit_log_trigger_at_id" ON "webhook_audit_log" ("trigger_id", "at", "id")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_audit_log_trigger_at_id"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_audit_log_at_id"`);
    await queryRunner.query(`DROP TABLE "webhook_audit_log"`);
    await queryRunner.query(`ALTER TABLE "webhook_triggers" DROP COLUMN "allowed_ips"`);
  }
}
