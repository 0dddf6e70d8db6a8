import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The trace context a run travels with (docs/observability.md, Traces): the trigger request's context, as the
 * host's OpenTelemetry propagator wrote it (`{"traceparent":"00-…"}` as JSON), stored with the run so the
 * process that runs it (a BullMQ worker, or another node after a recovery) continues the caller's trace, and
 * copied onto each callback delivery so the receiver is called in that trace. NULL when the host records no
 * traces; nullable columns without a default are added without rewriting the tables on both databases.
 */
export class WebhookTriggersTraceContext1764600000000 implements MigrationInterface {
  name = 'WebhookTriggersTraceContext1764600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_invocations" ADD COLUMN "trace_context" text`);
    await queryRunner.query(`ALTER TABLE "webhook_callback_deliveries" ADD COLUMN "trace_context" text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_callback_deliveries" DROP COLUMN "trace_context"`);
    await queryRunner.query(`ALTER TABLE "webhook_invocations" DROP COLUMN "trace_context"`);
  }
}
