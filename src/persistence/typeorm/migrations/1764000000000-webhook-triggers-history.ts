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
 * Plans on 1,000,000 runs (5 bots, 20 triggers, six statuses; `BENCH_ONLY=history npm run bench` prints
 * them), SQLite 3.53 without ANALYZE, EXPLAIN QUERY PLAN, none with `USE TEMP B-TREE` over a range:
 *   first page         SEARCH … USING INDEX IDX_webhook_invocations_bot_created_id (bot_id=?)
 *   cursor             SEARCH … USING INDEX IDX_webhook_invocations_bot_created_id (bot_id=? AND (created_at,id)<(?,?))
 *   status (+cursor)   SEARCH … USING INDEX IDX_webhook_invocations_bot_status_created_id (bot_id=? AND status=? AND (created_at,id)<(?,?))
 *   trigger            SEARCH … USING INDEX IDX_webhook_invocations_trigger_created_id (trigger_id=?)
 *   time range         SEARCH … USING INDEX IDX_webhook_invocations_bot_created_id (bot_id=? AND created_at>? AND created_at<?)
 *   search             MATERIALIZE found: SEARCH … USING INDEX sqlite_autoindex_webhook_invocations_1 (id=?),
 *                      SEARCH … USING INDEX IDX_webhook_invocations_bot_idempotency (bot_id=? AND idempotency_key=?)
 *   runs in 24 h       SEARCH … USING COVERING INDEX IDX_webhook_invocations_bot_created_id (bot_id=? AND created_at>?)
 *   last used          CORRELATED SCALAR SUBQUERY: SEARCH … USING COVERING INDEX IDX_webhook_invocations_trigger_created_id (trigger_id=?)
 * PostgreSQL 15 after VACUUM ANALYZE, EXPLAIN: status (+cursor) `Index Scan Backward using
 * IDX_webhook_invocations_bot_status_created_id` with `ROW(created_at, id) < ROW(…)` in its Index Cond;
 * search: `Append` of `Index Scan using webhook_invocations_pkey` and `… IDX_webhook_invocations_bot_idempotency`;
 * runs in 24 h: `Index Only Scan using IDX_webhook_invocations_bot_created_id`; last used: `Index Only Scan
 * Backward using IDX_webhook_invocations_trigger_created_id` under `Limit 1` per trigger. For the first
 * page, cursor, trigger and time range it chose `Index Scan Backward using IDX_webhook_invocations_created`
 * with the bot (trigger) as a Filter and an `Incremental Sort` on id within equal timestamps: cheap on
 * that table (every bot runs all the time, and rows were stored in created_at order), 0.6 ms a page.
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
