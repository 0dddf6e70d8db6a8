import type { BotOutput } from '../../bots/bot.types.js';
import type { InvocationError, InvocationRecord, InvocationStatus, TriggerRecord } from '../records.js';

/** PostgreSQL returns bigint as a string; SQLite as a number. */
const time = (value: unknown): Date | null => (value === null || value === undefined ? null : new Date(Number(value)));
const json = <T>(value: unknown): T | null => (value === null || value === undefined ? null : (JSON.parse(String(value)) as T));

export const TRIGGER_COLUMNS = 'id, bot_id, account_id, name, type, key_hash, key_ciphertext, created_at';
export const INVOCATION_COLUMNS =
  'id, trigger_id, bot_id, account_id, status, inputs, outputs, error, credits, idempotency_key, request_hash, created_at, started_at, finished_at, owner';

export function toTrigger(row: Record<string, unknown>): TriggerRecord {
  return {
    id: String(row.id),
    botId: String(row.bot_id),
    accountId: String(row.account_id),
    name: String(row.name),
    type: 'webhook',
    keyHash: String(row.key_hash),
    keyCiphertext: row.key_ciphertext === null ? null : String(row.key_ciphertext),
    createdAt: time(row.created_at)!,
  };
}

export function toInvocation(row: Record<string, unknown>): InvocationRecord {
  return {
    id: String(row.id),
    triggerId: String(row.trigger_id),
    botId: String(row.bot_id),
    accountId: String(row.account_id),
    status: row.status as InvocationStatus,
    inputs: json<Record<string, unknown>>(row.inputs) ?? {},
    outputs: json<BotOutput[]>(row.outputs),
    error: json<InvocationError>(row.error),
    credits: Number(row.credits),
    idempotencyKey: row.idempotency_key === null ? null : String(row.idempotency_key),
    requestHash: row.request_hash === null || row.request_hash === undefined ? null : String(row.request_hash),
    createdAt: time(row.created_at)!,
    startedAt: time(row.started_at),
    finishedAt: time(row.finished_at),
    owner: row.owner === null || row.owner === undefined ? null : String(row.owner),
  };
}

/** SQLite: SqliteError code; PostgreSQL: code 23505, on TypeORM's QueryFailedError or its driverError. */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  return e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === '23505' || e?.driverError?.code === '23505';
}
