import { AsyncLocalStorage } from 'node:async_hooks';

const current = new AsyncLocalStorage<{ principal: string | null }>();

// eslint-disable-next-line no-control-regex -- control characters are what a stored name must not carry
const CONTROL = /[\x00-\x1f\x7f]/g;

/** What a principal may be at most: longer names are cut (the audit log's column holds 200 characters). */
const PRINCIPAL_MAX = 200;

/** A principal as the audit log stores it: text of 1–200 characters without control characters, else null. */
function auditPrincipalOf(value: unknown): string | null {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  if (typeof text !== 'string') return null;
  const clean = text.replace(CONTROL, '').trim().slice(0, PRINCIPAL_MAX);
  return clean === '' ? null : clean;
}

/**
 * Who is making the admin calls in progress, for the audit log, carried with AsyncLocalStorage so the admin
 * service's methods need no extra parameter. The admin API sets it for each request from the `auditPrincipal`
 * setting; a host that calls `WebhookTriggersAdmin` itself wraps its calls the same way:
 *
 * ```ts
 * await AuditContext.run('nightly-rotation-job', () => admin.rotateKey(triggerId));
 * ```
 *
 * Outside any `run`, entries are recorded with no principal (shown as "unknown").
 */
export class AuditContext {
  /** Runs `fn` (and everything it awaits) on behalf of `principal` (cut to 200 characters; null for nobody named). */
  static run<T>(principal: string | null | undefined, fn: () => T): T {
    return current.run({ principal: auditPrincipalOf(principal) }, fn);
  }

  /** The principal of the calls in progress, or null. */
  static principal(): string | null {
    return current.getStore()?.principal ?? null;
  }
}

/** The default `auditPrincipal`: the `request.user` a host's guard (e.g. Passport) set: its id, username, email, sub or name. */
export function principalFromUser(request: unknown): string | null {
  const user = (request as { user?: unknown } | null)?.user;
  if (typeof user === 'string') return auditPrincipalOf(user);
  if (typeof user !== 'object' || user === null) return null;
  const fields = user as Record<string, unknown>;
  for (const field of ['id', 'username', 'email', 'sub', 'name']) {
    const principal = auditPrincipalOf(fields[field]);
    if (principal !== null) return principal;
  }
  return null;
}
