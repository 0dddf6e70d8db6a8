import type { WebhookTransaction } from './unit-of-work.js';

/** A small, flat JSON object of what an admin change was about (never a key or a secret). */
export type AuditDetails = Record<string, string | number | boolean | null>;

/** One admin change or key view: when, what, on which trigger, run or account, and who. */
export interface AuditEntry {
  /** `aud_` + 32 lower-case hex digits. */
  id: string;
  at: Date;
  /** What was done, e.g. `trigger.created`, `trigger.key_viewed`, `credits.set` (docs/security.md lists them). */
  action: string;
  triggerId: string | null;
  invocationId: string | null;
  accountId: string | null;
  /** Who did it, as the host's guard named them; null when nobody was named ("unknown"). */
  principal: string | null;
  details: AuditDetails;
}

/** Which entries to list: every filter optional; newest first, `limit` at most. */
export interface AuditQuery {
  action?: string;
  triggerId?: string;
  principal?: string;
  /** Entries at or after this time. */
  from?: Date;
  /** Entries before this time. */
  to?: Date;
  /** Keyset paging: only entries that come after this one, newest first (older, or as old with a smaller id). */
  after?: { at: Date; id: string };
  limit: number;
}

/**
 * The audit log: appended to by the admin service after each change or key view, listed by the admin, and cut by
 * retention (`auditRetentionDays`). Its own store in `WebhookStorage` (`storage.audit`).
 */
export abstract class AuditLog {
  /** Stores one entry; joins `tx` when given. */
  abstract append(entry: AuditEntry, tx?: WebhookTransaction): Promise<void>;
  /** Entries matching `query`, newest first (`at` then `id`, both descending), at most `query.limit`. */
  abstract list(query: AuditQuery): Promise<AuditEntry[]>;
  /** Deletes entries older than `before` (retention); returns how many. */
  abstract deleteOlderThan(before: Date): Promise<number>;
}
