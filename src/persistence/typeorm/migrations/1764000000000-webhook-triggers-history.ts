import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * History queries (the admin's history screen, bots list and trigger list): every shape is an index
 * range scan read in index order, `(created_at DESC, id DESC)`, never a sort of a bot's whole history.
 *
 * - `bot_created_id` replaces `(bot_id, created_at)`: with `id` in the key the keyset cursor
 *   `(created_at, id) < (?, ?)` is the range's bound and equal timestamps need no sort.
 * - `bot_status_created_id`: the status filter.
 * - `trigger_created_id`: the trigger filter, and a trigger's last use (MAX(created_at) is one seek).
 * - `bot_idempotency`, partial (`idempotency_key IS NOT NULL`): search by key within a bot. Its own
 *   index rather than `trigger_id IN (SELECT id FROM webhook_triggers WHERE bot_id = ?)` on the unique
 *   (trigger_id, idempotency_key): a host may replace the trigger store, leaving webhook_triggers empty.
 *   Partial, so runs without a key (most) cost it nothing on insert.
 *
 * Plans on 1,000,000 runs (5 bots, 20 triggers, six statuses; bench/history.ts), SQLite 3.5x, EXPLAIN QUERY PLAN:
 *   first page           SEARCH webhook_invocations USING INDEX IDX_webhook_invocations_bot_created_id (bot_id=?)
 *   deep page (cursor)   SEARCH … USING INDEX IDX_webhook_invocations_bot_created_id (bot_id=? AND (created_at,id)<(?,?))
 *   status               SEARCH … USING INDEX IDX_webhook_invocations_bot_status_created_id (bot_id=? AND status=?)
 *   trigger              SEARCH … USING INDEX IDX_webhook_invocations_trigger_created_id (trigger_id=?)
 *   time range           SEARCH … USING INDEX IDX_webhook_invocations_bot_created_id (bot_id=? AND created_at>? AND created_at<?)
 *   search               SEARCH … USING INDEX sqlite_autoindex_webhook_invocations_1 (id=?)
 *                        SEARCH … USING INDEX IDX_webhook_invocations_bot_idempotency (bot_id=? AND idempotency_key=?)
 *   runs in 24 h         SEARCH … USING COVERING INDEX IDX_webhook_invocations_bot_created_id (bot_id=? AND created_at>?)
 *   last used            SEARCH … USING COVERING INDEX IDX_webhook_invocations_trigger_created_id (trigger_id=?)
 * and none of them `USE TEMP B-TREE FOR ORDER BY` (the UNION of a search sorts its few rows). PostgreSQL 15,
 * EXPLAIN after ANALYZE: `Limit -> Index Scan Backward using <the same index>` with the cursor in
 * `Index Cond: ((bot_id = …) AND (ROW(created_at, id) < ROW(…)))`, no Sort node; search: `Sort` over
 * `Append` of `Index Scan using webhook_invocations_pkey` and `Index Scan using
 * IDX_webhook_invocations_bot_idempotency`; last used: `Result` over `InitPlan … Index Only Scan Backward`.
 *
 * On PostgreSQL, CREATE INDEX blocks writes to the table while it builds (migrations run in a
 * transaction, which CREATE INDEX CONCURRENTLY cannot): about a second per million runs here.
 */
export class WebhookTriggersHistory1764000000000 implements MigrationInterface {
  name = 'WebhookTriggersHistory1764000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_invocations_bot_created_id" ON "webhook_invocations" ("bot_id", "created_at", "id")`,
    );
    await queryRunner.query(`DROP INDEX "IDX_webhook_invocations_bot_created"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_invocations_bot_status_created_id" ON "webhook_invocations" ("bot_id", "status", "created_at", "id")`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_invocations_trigger_created_id" ON "webhook_invocations" ("trigger_id", "created_at", "id")`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_invocations_bot_idempotency" ON "webhook_invocations" ("bot_id", "idempotency_key") WHERE "idempotency_key" IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_invocations_bot_idempotency"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_invocations_trigger_created_id"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_invocations_bot_status_created_id"`);
    await queryRunner.query(`CREATE INDEX "IDX_webhook_invocations_bot_created" ON "webhook_invocations" ("bot_id", "created_at")`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_invocations_bot_created_id"`);
  }
}
