import { DatabaseConnectionLostError } from '../../errors/webhook-trigger.errors.js';

// What the SQL drivers say when the database went away: known here only, so nothing outside persistence/ names a
// driver's error code. The executor turns such an error into DatabaseConnectionLostError (503 with Retry-After).

/**
 * SQLSTATE classes and codes that mean the database went away under the request, not that it was wrong:
 * 08 (connection exception), 57P01–57P03 (terminated by an administrator, a crash shutdown, cannot connect now).
 */
const DATABASE_GONE_CODE = /^(08...|57P0[123])$/;
/** What node-postgres (and the socket under it) throws when the connection ends or cannot be made. */
const DATABASE_GONE_MESSAGE = /^(Connection terminated|Client has encountered a connection error|connect ECONNREFUSED|read ECONNRESET)/;
const SOCKET_GONE_CODE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE']);

/**
 * True when `error` says the database connection was lost or refused (a server restart, a terminated backend):
 * the request may succeed if retried, so it is answered 503 with Retry-After, not 500. Looks at the error and,
 * for TypeORM's QueryFailedError, its `driverError`.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (const e of errorChain(error)) {
    if (typeof e.code === 'string' && (DATABASE_GONE_CODE.test(e.code) || SOCKET_GONE_CODE.has(e.code))) return true;
    if (typeof e.message === 'string' && DATABASE_GONE_MESSAGE.test(e.message)) return true;
  }
  return false;
}

/** `error`, then what it wraps as `driverError` (TypeORM's QueryFailedError keeps the driver's error there): three at most. */
function* errorChain(error: unknown): Generator<{ code?: unknown; message?: unknown }> {
  for (let e = error as { code?: unknown; message?: unknown; driverError?: unknown } | null, depth = 0; e && depth < 3; depth++) {
    yield e;
    e = typeof e.driverError === 'object' ? e.driverError : null;
  }
}

/** SQLSTATE 40001 (serialization failure) and 40P01 (deadlock detected): the server rolled the statement back whole. */
const ROLLED_BACK_CONFLICT = new Set(['40001', '40P01']);

/**
 * True when PostgreSQL aborted a statement for a conflict with another transaction (a deadlock, a
 * serialization failure): nothing of it was written, and the same statement may simply be run again.
 */
export function isRolledBackConflict(error: unknown): boolean {
  for (const e of errorChain(error)) if (typeof e.code === 'string' && ROLLED_BACK_CONFLICT.has(e.code)) return true;
  return false;
}

/** `error` as the stores' callers should see it: DatabaseConnectionLostError when the database went away, else itself. */
export function databaseError(error: unknown): unknown {
  return !(error instanceof DatabaseConnectionLostError) && isDatabaseUnavailable(error) ? new DatabaseConnectionLostError(error) : error;
}
