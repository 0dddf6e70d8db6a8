import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Several keys per trigger (docs/security.md, "Keys and rotation"): `webhook_trigger_keys`, one row per key,
 * revoked ones kept (`revoked_at`) so the screens and an audit can name them. `key_hash` is the SHA-256 of the
 * key (hex); `key_ciphertext` its AES-256-GCM ciphertext when the host set `keySecret`, else null. `expires_at`
 * is judged when a key is checked (no sweep writes it away); `rotated_at` says a rotation set it (a grace end).
 *
 * Each trigger's key moves into the table as "Key 1" (id `key_` + the trigger id's 16 characters, unique as
 * they are), so every key works on after the migration; the trigger's `key_hash` and `key_ciphertext` columns
 * are then dropped (SQLite ≥ 3.35 and PostgreSQL both drop a column in place; neither is in an index).
 * Index: a trigger's keys in order `(trigger_id, created_at, id)`.
 */
export class WebhookTriggersKeys1764300000000 implements MigrationInterface {
  name = 'WebhookTriggersKeys1764300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "webhook_trigger_keys" (
      "id" varchar(40) PRIMARY KEY NOT NULL,
      "trigger_id" varchar(40) NOT NULL,
      "label" varchar(200) NOT NULL,
      "key_hash" varchar(64) NOT NULL,
      "key_ciphertext" text,
      "created_at" bigint NOT NULL,
      "expires_at" bigint,
      "rotated_at" bigint,
      "revoked_at" bigint,
      "last_used_at" bigint)`);
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_trigger_keys_trigger_created_id" ON "webhook_trigger_keys" ("trigger_id", "created_at", "id")`,
    );
    await queryRunner.query(`INSERT INTO "webhook_trigger_keys" ("id", "trigger_id", "label", "key_hash", "key_ciphertext", "created_at")
      SELECT 'key_' || substr("id", 5), "id", 'Key 1', "key_hash", "key_ciphertext", "created_at" FROM "webhook_triggers"`);
    await queryRunner.query(`ALTER TABLE "webhook_triggers" DROP COLUMN "key_ciphertext"`);
    await queryRunner.query(`ALTER TABLE "webhook_triggers" DROP COLUMN "key_hash"`);
  }

  /** Back to one key per trigger: its newest key not revoked (a trigger without one gets a hash no key has). */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_triggers" ADD COLUMN "key_hash" varchar(64) NOT NULL DEFAULT '${'0'.repeat(64)}'`);
    await queryRunner.query(`ALTER TABLE "webhook_triggers" ADD COLUMN "key_ciphertext" text`);
    const newest = (column: string) => `(SELECT k."${column}" FROM "webhook_trigger_keys" k
      WHERE k."trigger_id" = "webhook_triggers"."id" AND k."revoked_at" IS NULL ORDER BY k."created_at" DESC, k."id" DESC LIMIT 1)`;
    await queryRunner.query(
      `UPDATE "webhook_triggers" SET "key_hash" = COALESCE(${newest('key_hash')}, "key_hash"), "key_ciphertext" = ${newest('key_ciphertext')}`,
    );
    await queryRunner.query(`DROP INDEX "IDX_webhook_trigger_keys_trigger_created_id"`);
    await queryRunner.query(`DROP TABLE "webhook_trigger_keys"`);
  }
}
