import type { AuditEntry } from '../../persistence/audit-log.js';

/** Every action the audit log records, in the order the admin screens list them. */
export const AUDIT_ACTIONS = [
  'trigger.created',
  'trigger.key_viewed',
  'trigger.key_rotated',
  'trigger.key_created',
  'trigger.key_revoked',
  'trigger.request_signing_set',
  'trigger.signing_secret_rotated',
  'trigger.signing_secret_revoked',
  'trigger.deleted',
  'trigger.allowed_ips_set',
  'callback.created',
  'callback.changed',
  'callback.deleted',
  'callback.secret_rotated',
  'delivery.redelivered',
  'credits.set',
  'invocation.cancelled',
  'invocation.replayed',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Entries per audit log page unless a `limit` says otherwise. */
export const AUDIT_PAGE_SIZE = 50;
/** Most entries one page holds. */
export const AUDIT_PAGE_MAX = 200;

/** Filters and paging of the audit log; every field optional. */
export interface AuditFilter {
  /** 1–200. @default 50 */
  limit?: number;
  action?: AuditAction;
  triggerId?: string;
  /** Exactly as recorded (the host's principal). */
  principal?: string;
  /** Entries at or after this time. */
  from?: Date;
  /** Entries before this time. */
  to?: Date;
  /** The `next` of the previous page. */
  cursor?: string;
}

/** One entry as the admin shows it: the stored entry as is (nothing in it is hidden or reshaped). */
export type AuditEntryView = AuditEntry;

/** A page of the audit log, newest first; `next` is the cursor of the page after it (null on the last one). */
export interface AuditPage {
  entries: AuditEntryView[];
  next: string | null;
}
