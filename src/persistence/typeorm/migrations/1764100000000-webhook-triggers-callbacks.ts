import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Signed callbacks (docs/callbacks.md): one callback per trigger, and the outbox of its deliveries.
 *
 * - `webhook_callbacks`: the admin's settings of a trigger's callback. `secret` is the `whsec_…` secret,
 *   AES-256-GCM encrypted with `keySecret` when the host set one (it must be readable to sign, so without
 *   `keySecret` it is stored as it is, and only shown when set or rotated). `consecutive_failures` counts
 *   deliveries in a row that used up their retry schedule; past the option's bound the callback is disabled.
 * - `webhook_callback_deliveries`: each delivery is stored before it is sent, its body fixed at creation and
 *   its `msg_id` (the `webhook-id` header) the same on every attempt. A sender claims one with
 *   `owner` + `lease_expires_at`, as runs are claimed, so two processes never send the same attempt at once
 *   and a dead sender's delivery is taken again once its lease ran out.
 * Indexes: due deliveries `(status, next_attempt_at)`; a trigger's log newest first `(trigger_id, created_at, id)`;
 * a run's deliveries `(invocation_id)`.
 */
export class WebhookTriggersCallbacks1764100000000 implements MigrationInterface {
  name = 'WebhookTriggersCallbacks1764100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "webhook_callbacks" (
      "trigger_id" varchar(40) PRIMARY KEY NOT NULL,
      "url" varchar(2048) NOT NULL,
      "events" varchar(200) NOT NULL,
      "secret" text NOT NULL,
      "enabled" integer NOT NULL,
      "consecutive_failures" integer NOT NULL,
      "disabled_reason" varchar(500),
      "created_at" bigint NOT NULL,
      "updated_at" bigint NOT NULL)`);
    await queryRunner.query(`CREATE TABLE "webhook_callback_deliveries" (
      "id" varchar(40) PRIMARY KEY NOT NULL,
      "trigger_id" varchar(40) NOT NULL,
      "invocation_id" varchar(40) NOT NULL,
      "event" varchar(40) NOT NULL,
      "msg_id" varchar(64) NOT NULL,
      "body" text NOT NULL,
      "status" varchar(20) NOT NULL,
      "attempts" integer NOT NULL,
      "next_attempt_at" bigint,
      "last_attempt_at" bigint,
      "response_status" integer,
      "latency_ms" integer,
      "last_error" varchar(1000),
      "owner" varchar(100),
      "lease_expires_at" bigint,
      "created_at" bigint NOT NULL)`);
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_callback_deliveries_due" ON "webhook_callback_deliveries" ("status", "next_attempt_at")`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_callback_deliveries_trigger_created_id" ON "webhook_callback_deliveries" ("trigger_id", "created_at", "id")`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_webhook_callback_deliveries_invocation" ON "webhook_callback_deliveries" ("invocation_id")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_callback_deliveries_invocation"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_callback_deliveries_trigger_created_id"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_callback_deliveries_due"`);
    await queryRunner.query(`DROP TABLE "webhook_callback_deliveries"`);
    await queryRunner.query(`DROP TABLE "webhook_callbacks"`);
  }
}
