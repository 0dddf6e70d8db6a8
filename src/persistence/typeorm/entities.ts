import { Column, Entity, Index, PrimaryColumn, type ValueTransformer } from 'typeorm';
import type { BotOutput } from '../../bots/bot.types.js';
import type { InvocationError, InvocationStatus } from '../records.js';

/** Times are epoch milliseconds in a bigint column: the same on SQLite and PostgreSQL. */
const epochMs: ValueTransformer = {
  to: (value: Date | null | undefined) => (value == null ? value : value.getTime()),
  from: (value: string | number | null) => (value == null ? null : new Date(Number(value))),
};
/** PostgreSQL returns bigint as a string. */
const bigintNumber: ValueTransformer = {
  to: (value: number) => value,
  from: (value: string | number) => Number(value),
};

@Entity('webhook_accounts')
export class WebhookAccountEntity {
  @PrimaryColumn('varchar', { length: 200 })
  id!: string;

  @Column('bigint', { transformer: bigintNumber })
  credits!: number;
}

@Entity('webhook_triggers')
@Index('IDX_webhook_triggers_bot', ['botId'])
export class WebhookTriggerEntity {
  @PrimaryColumn('varchar', { length: 40 })
  id!: string;

  @Column('varchar', { name: 'bot_id', length: 200 })
  botId!: string;

  @Column('varchar', { name: 'account_id', length: 200 })
  accountId!: string;

  @Column('varchar', { length: 200 })
  name!: string;

  @Column('varchar', { length: 20 })
  type!: 'webhook';

  @Column('bigint', { name: 'created_at', transformer: epochMs })
  createdAt!: Date;

  /** JSON list of addresses and CIDRs; NULL lets every address in. */
  @Column('text', { name: 'allowed_ips', nullable: true })
  allowedIps!: string | null;

  @Column('bigint', { name: 'deleted_at', nullable: true, transformer: epochMs })
  deletedAt!: Date | null;

  @Column('varchar', { name: 'request_signing', length: 20, default: 'off' })
  requestSigning!: string;
}

@Entity('webhook_trigger_keys')
@Index('IDX_webhook_trigger_keys_trigger_created_id', ['triggerId', 'createdAt', 'id'])
export class WebhookTriggerKeyEntity {
  @PrimaryColumn('varchar', { length: 40 })
  id!: string;

  @Column('varchar', { name: 'trigger_id', length: 40 })
  triggerId!: string;

  @Column('varchar', { length: 200 })
  label!: string;

  @Column('varchar', { name: 'key_hash', length: 64 })
  keyHash!: string;

  @Column('text', { name: 'key_ciphertext', nullable: true })
  keyCiphertext!: string | null;

  @Column('bigint', { name: 'created_at', transformer: epochMs })
  createdAt!: Date;

  @Column('bigint', { name: 'expires_at', nullable: true, transformer: epochMs })
  expiresAt!: Date | null;

  @Column('bigint', { name: 'rotated_at', nullable: true, transformer: epochMs })
  rotatedAt!: Date | null;

  @Column('bigint', { name: 'revoked_at', nullable: true, transformer: epochMs })
  revokedAt!: Date | null;

  @Column('bigint', { name: 'last_used_at', nullable: true, transformer: epochMs })
  lastUsedAt!: Date | null;
}

@Entity('webhook_invocations')
@Index('IDX_webhook_invocations_bot_created_id', ['botId', 'createdAt', 'id'])
@Index('IDX_webhook_invocations_bot_status_created_id', ['botId', 'status', 'createdAt', 'id'])
@Index('IDX_webhook_invocations_trigger_created_id', ['triggerId', 'createdAt', 'id'])
@Index('IDX_webhook_invocations_bot_idempotency', ['botId', 'idempotencyKey'], { where: '"idempotency_key" IS NOT NULL' })
@Index('UQ_webhook_invocations_idempotency', ['triggerId', 'idempotencyKey'], { unique: true, where: '"idempotency_key" IS NOT NULL' })
@Index('IDX_webhook_invocations_status_lease', ['status', 'leaseExpiresAt'])
@Index('IDX_webhook_invocations_created', ['createdAt'])
@Index('IDX_webhook_invocations_finished_status_started', ['finishedAt', 'status', 'startedAt'])
@Index('IDX_webhook_invocations_started_created', ['startedAt', 'createdAt'])
export class WebhookInvocationEntity {
  @PrimaryColumn('varchar', { length: 40 })
  id!: string;

  @Column('varchar', { name: 'trigger_id', length: 40 })
  triggerId!: string;

  @Column('varchar', { name: 'bot_id', length: 200 })
  botId!: string;

  @Column('varchar', { name: 'account_id', length: 200 })
  accountId!: string;

  @Column('varchar', { length: 20 })
  status!: InvocationStatus;

  @Column('simple-json')
  inputs!: Record<string, unknown>;

  @Column('simple-json', { nullable: true })
  outputs!: BotOutput[] | null;

  @Column('simple-json', { nullable: true })
  error!: InvocationError | null;

  @Column('integer')
  credits!: number;

  @Column('varchar', { name: 'idempotency_key', length: 255, nullable: true })
  idempotencyKey!: string | null;

  @Column('varchar', { name: 'request_hash', length: 64, nullable: true })
  requestHash!: string | null;

  @Column('varchar', { length: 100, nullable: true })
  owner!: string | null;

  @Column('bigint', { name: 'lease_expires_at', nullable: true, transformer: epochMs })
  leaseExpiresAt!: Date | null;

  /** Claims so far (`queued → running`); bounds the restarts of interrupted runs. */
  @Column('integer', { default: 0 })
  attempts!: number;

  /** The trigger request's trace context (the propagator's fields as JSON); null when no traces are recorded. */
  @Column('text', { name: 'trace_context', nullable: true })
  traceContext!: string | null;

  @Column('bigint', { name: 'created_at', transformer: epochMs })
  createdAt!: Date;

  @Column('bigint', { name: 'started_at', nullable: true, transformer: epochMs })
  startedAt!: Date | null;

  @Column('bigint', { name: 'finished_at', nullable: true, transformer: epochMs })
  finishedAt!: Date | null;
}

@Entity('webhook_callbacks')
export class WebhookCallbackEntity {
  @PrimaryColumn('varchar', { name: 'trigger_id', length: 40 })
  triggerId!: string;

  @Column('varchar', { length: 2048 })
  url!: string;

  @Column('varchar', { length: 200 })
  events!: string;

  @Column('text')
  secret!: string;

  @Column('integer')
  enabled!: number;

  @Column('integer', { name: 'consecutive_failures' })
  consecutiveFailures!: number;

  @Column('varchar', { name: 'disabled_reason', length: 500, nullable: true })
  disabledReason!: string | null;

  @Column('bigint', { name: 'created_at', transformer: epochMs })
  createdAt!: Date;

  @Column('bigint', { name: 'updated_at', transformer: epochMs })
  updatedAt!: Date;
}

@Entity('webhook_callback_deliveries')
@Index('IDX_webhook_callback_deliveries_due', ['status', 'nextAttemptAt'])
@Index('IDX_webhook_callback_deliveries_trigger_created_id', ['triggerId', 'createdAt', 'id'])
@Index('IDX_webhook_callback_deliveries_invocation', ['invocationId'])
@Index('IDX_webhook_callback_deliveries_status_last_attempt', ['status', 'lastAttemptAt'])
export class WebhookCallbackDeliveryEntity {
  @PrimaryColumn('varchar', { length: 40 })
  id!: string;

  @Column('varchar', { name: 'trigger_id', length: 40 })
  triggerId!: string;

  @Column('varchar', { name: 'invocation_id', length: 40 })
  invocationId!: string;

  @Column('varchar', { length: 40 })
  event!: string;

  @Column('varchar', { name: 'msg_id', length: 64 })
  msgId!: string;

  @Column('text')
  body!: string;

  @Column('varchar', { length: 20 })
  status!: string;

  @Column('integer')
  attempts!: number;

  @Column('bigint', { name: 'next_attempt_at', nullable: true, transformer: epochMs })
  nextAttemptAt!: Date | null;

  @Column('bigint', { name: 'last_attempt_at', nullable: true, transformer: epochMs })
  lastAttemptAt!: Date | null;

  @Column('integer', { name: 'response_status', nullable: true })
  responseStatus!: number | null;

  @Column('integer', { name: 'latency_ms', nullable: true })
  latencyMs!: number | null;

  @Column('varchar', { name: 'last_error', length: 1000, nullable: true })
  lastError!: string | null;

  /** The run's trace context, copied from its invocation: each attempt is sent in the run's trace. */
  @Column('text', { name: 'trace_context', nullable: true })
  traceContext!: string | null;

  @Column('varchar', { length: 100, nullable: true })
  owner!: string | null;

  @Column('bigint', { name: 'lease_expires_at', nullable: true, transformer: epochMs })
  leaseExpiresAt!: Date | null;

  @Column('bigint', { name: 'created_at', transformer: epochMs })
  createdAt!: Date;
}

@Entity('webhook_audit_log')
@Index('IDX_webhook_audit_log_at_id', ['at', 'id'])
@Index('IDX_webhook_audit_log_trigger_at_id', ['triggerId', 'at', 'id'])
export class WebhookAuditLogEntity {
  @PrimaryColumn('varchar', { length: 40 })
  id!: string;

  @Column('bigint', { transformer: epochMs })
  at!: Date;

  @Column('varchar', { length: 60 })
  action!: string;

  @Column('varchar', { name: 'trigger_id', length: 40, nullable: true })
  triggerId!: string | null;

  @Column('varchar', { name: 'invocation_id', length: 40, nullable: true })
  invocationId!: string | null;

  @Column('varchar', { name: 'account_id', length: 200, nullable: true })
  accountId!: string | null;

  @Column('varchar', { length: 200, nullable: true })
  principal!: string | null;

  @Column('varchar', { length: 2000 })
  details!: string;
}

/** Add these to your DataSource's `entities` when you pass `dataSourceName`. */
@Entity('webhook_trigger_signing_secrets')
@Index('IDX_webhook_trigger_signing_secrets_trigger_created_id', ['triggerId', 'createdAt', 'id'])
export class WebhookTriggerSigningSecretEntity {
  @PrimaryColumn('varchar', { length: 40 })
  id!: string;

  @Column('varchar', { name: 'trigger_id', length: 40 })
  triggerId!: string;

  @Column('text')
  secret!: string;

  @Column('bigint', { name: 'created_at', transformer: epochMs })
  createdAt!: Date;

  @Column('bigint', { name: 'expires_at', nullable: true, transformer: epochMs })
  expiresAt!: Date | null;

  @Column('bigint', { name: 'revoked_at', nullable: true, transformer: epochMs })
  revokedAt!: Date | null;
}

export const WEBHOOK_TRIGGER_ENTITIES = [
  WebhookAccountEntity,
  WebhookTriggerEntity,
  WebhookTriggerKeyEntity,
  WebhookInvocationEntity,
  WebhookCallbackEntity,
  WebhookCallbackDeliveryEntity,
  WebhookTriggerSigningSecretEntity,
  WebhookAuditLogEntity,
];
