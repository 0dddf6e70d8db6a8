import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Signed requests (docs/security.md, "Signed requests"): a trigger's mode and its signing secrets.
 *
 * - `webhook_triggers.request_signing`: `off` (the default: existing triggers keep asking X-Key only),
 *   `with-key` or `instead-of-key`. A column of the trigger, so the trigger's one read (and every node's cached
 *   copy) carries it and a trigger that does not sign costs nothing more.
 * - `webhook_trigger_signing_secrets`: several per trigger so a sender can rotate. `secret` is the `whsec_…`
 *   secret, AES-256-GCM encrypted with `keySecret` when the host set one (as `webhook_callbacks.secret`: it must
 *   be readable to verify an HMAC, so it cannot be hashed). A rotation sets `expires_at` on the older ones
 *   (now + keyRotationGraceMs); `revoked_at` ends one at once.
 * Index: a trigger's secrets newest first `(trigger_id, created_at, id)`.
 */
export class WebhookTriggersSigning1764400000000 implements MigrationInterface {
  name = 'WebhookTriggersSigning1764400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_triggers" ADD COLUMN "request_signing" varchar(20) NOT NULL DEFAULT 'off'`);
    await queryRunner.query(`CREATE TABLE "webhook_trigger_signing_secrets" (
      "id" varchar(40) PRIMARY KEY NOT NULL,
      "trigger_id" varchar(40) NOT NULL,
      "secret" text NOT NULL,
      "created_at" bigint NOT NULL,
      "expires_at" bigint,
      "revoked_at" bigint)`);
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_trigger_signing_secrets_trigger_created_id" ON "webhook_trigger_signing_secrets" ("trigger_id", "created_at", "id")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_trigger_signing_secrets_trigger_created_id"`);
    await queryRunner.query(`DROP TABLE "webhook_trigger_signing_secrets"`);
    await queryRunner.query(`ALTER TABLE "webhook_triggers" DROP COLUMN "request_signing"`);
  }
}
