import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The unique index on `(trigger_id, idempotency_key)` holds only the runs that carry a key. NULL keys never
 * conflicted (both databases treat NULLs as distinct), so uniqueness is unchanged; but every run without a key
 * (most of them) entered the index all the same: one B-tree insert per accepted run and one delete per run that
 * retention removes, for nothing. Both databases still use it for a key's look-up (`idempotency_key = ?` implies
 * `IS NOT NULL`), and PostgreSQL's `ON CONFLICT DO NOTHING` (no conflict target) honours a partial unique index.
 *
 * On PostgreSQL the CREATE blocks writes to the table while it builds (the index is small: only keyed runs).
 */
export class WebhookTriggersIdempotencyPartial1764800000000 implements MigrationInterface {
  name = 'WebhookTriggersIdempotencyPartial1764800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "UQ_webhook_invocations_idempotency"`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_invocations_idempotency" ON "webhook_invocations" ("trigger_id", "idempotency_key") WHERE "idempotency_key" IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "UQ_webhook_invocations_idempotency"`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_invocations_idempotency" ON "webhook_invocations" ("trigger_id", "idempotency_key")`,
    );
  }
}
