import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Creates the three tables. Written as plain SQL per database so the schema is reviewable. */
export class WebhookTriggersInitial1763800000000 implements MigrationInterface {
  name = 'WebhookTriggersInitial1763800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "webhook_accounts" (
      "id" varchar(200) PRIMARY KEY NOT NULL,
      "credits" bigint NOT NULL,
      CONSTRAINT "CHK_webhook_accounts_credits" CHECK ("credits" >= 0))`);
    await queryRunner.query(`CREATE TABLE "webhook_triggers" (
      "id" varchar(40) PRIMARY KEY NOT NULL,
      "bot_id" varchar(200) NOT NULL,
      "account_id" varchar(200) NOT NULL,
      "name" varchar(200) NOT NULL,
      "type" varchar(20) NOT NULL,
      "key_hash" varchar(64) NOT NULL,
      "key_ciphertext" text,
      "created_at" bigint NOT NULL,
      "deleted_at" bigint)`);
    await queryRunner.query(`CREATE INDEX "IDX_webhook_triggers_bot" ON "webhook_triggers" ("bot_id")`);
    await queryRunner.query(`CREATE TABLE "webhook_invocations" (
      "id" varchar(40) PRIMARY KEY NOT NULL,
      "trigger_id" varchar(40) NOT NULL,
      "bot_id" varchar(200) NOT NULL,
      "account_id" varchar(200) NOT NULL,
      "status" varchar(20) NOT NULL,
      "inputs" text NOT NULL,
      "outputs" text,
      "error" text,
      "credits" integer NOT NULL,
      "idempotency_key" varchar(255),
      "created_at" bigint NOT NULL,
      "started_at" bigint,
      "finished_at" bigint)`);
    await queryRunner.query(`CREATE INDEX "IDX_webhook_invocations_bot_created" ON "webhook_invocations" ("bot_id", "created_at")`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_invocations_idempotency" ON "webhook_invocations" ("trigger_id", "idempotency_key")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "webhook_invocations"`);
    await queryRunner.query(`DROP TABLE "webhook_triggers"`);
    await queryRunner.query(`DROP TABLE "webhook_accounts"`);
  }
}
