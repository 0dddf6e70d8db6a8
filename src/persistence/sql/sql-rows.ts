import type { BotOutput } from '../../bots/bot.types.js';
import type { InvocationError, InvocationRecord, InvocationStatus, TriggerKeyRecord, TriggerRecord } from '../records.js';

/** PostgreSQL returns bigint as a string; SQLite as a number. */
const time = (value: unknown): Date | null => (value === null || value === undefined ? null : new Date(Number(value)));
/** A text column's value: the drivers give strings (numbers for SQLite integers read as text). */
export function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint') return value.toString();
  throw new TypeError(`expected a text column, got ${typeof value}`);
}
export const nullableText = (value: unknown): string | null => (value === null || value === undefined ? null : text(value));
const json = <T>(value: unknown): T | null => (value === null || value === undefined ? null : (JSON.parse(text(value)) as T));

export const TRIGGER_COLUMNS = 'id, bot_id, account_id, name, type, created_at, request_signing, allowed_ips';
export const TRIGGER_KEY_COLUMNS =
  'id, trigger_id, label, key_hash, key_ciphertext, created_at, expires_at, rotated_at, revoked_at, last_used_at';
export const INVOCATION_COLUMNS =
  'id, trigger_id, bot_id, account_id, status, inputs, outputs, error, credits, idempotency_key, request_hash, created_at, started_at, finished_at, owner, attempts, trace_context';

/** A trigger row, with its keys (read apart: `toTriggerKey`). */
export function toTrigger(row: Record<string, unknown>, keys: TriggerKeyRecord[]): TriggerRecord {
  return {
    id: text(row.id),
    botId: text(row.bot_id),
    accountId: text(row.account_id),
    name: text(row.name),
    type: 'webhook',
    keys,
    createdAt: time(row.created_at)!,
    // Absent when off (the default), as a trigger made without the field is.
    requestSigning: row.request_signing === 'with-key' || row.request_signing === 'instead-of-key' ? row.request_signing : undefined,
    // Absent when none (NULL): every address allowed.
    allowedIps: json<string[]>(row.allowed_ips) ?? undefined,
  };
}

export function toTriggerKey(row: Record<string, unknown>): TriggerKeyRecord {
  return {
    id: text(row.id),
    triggerId: text(row.trigger_id),
    label: text(row.label),
    keyHash: text(row.key_hash),
    keyCiphertext: nullableText(row.key_ciphertext),
    createdAt: time(row.created_at)!,
    expiresAt: time(row.expires_at),
    rotatedAt: time(row.rotated_at),
    revokedAt: time(row.revoked_at),
    lastUsedAt: time(row.last_used_at),
  };
}

export function toInvocation(row: Record<string, unknown>): InvocationRecord {
  return {
    id: text(row.id),
    triggerId: text(row.trigger_id),
    botId: text(row.bot_id),
    accountId: text(row.account_id),
    status: row.status as InvocationStatus,
    inputs: json<Record<string, unknown>>(row.inputs) ?? {},
    outputs: json<BotOutput[]>(row.outputs),
    error: json<InvocationError>(row.error),
    credits: Number(row.credits),
    idempotencyKey: nullableText(row.idempotency_key),
    requestHash: nullableText(row.request_hash),
    createdAt: time(row.created_at)!,
    startedAt: time(row.started_at),
    finishedAt: time(row.finished_at),
    owner: nullableText(row.owner),
    attempts: Number(row.attempts ?? 0),
    traceContext: nullableText(row.trace_context),
  };
}

/** SQLite: SqliteError code; PostgreSQL: code 23505, on TypeORM's QueryFailedError or its driverError. */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  return e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === '23505' || e?.driverError?.code === '23505';
}
