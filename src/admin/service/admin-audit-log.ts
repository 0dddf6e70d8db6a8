import { Injectable } from '@nestjs/common';
import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { BAD_ADMIN_FIELD } from '../../errors/webhook-trigger.messages.js';
import { PLAIN_TEXT_200 } from '../../keys/ids.js';
import { AuditLog, type AuditQuery } from '../../persistence/audit-log.js';
import { AUDIT_ACTIONS, AUDIT_PAGE_MAX, AUDIT_PAGE_SIZE, type AuditFilter, type AuditPage } from '../audit/audit-views.js';

/** A page's cursor: the last entry's time (ms) and id. */
const CURSOR = /^(\d{1,15})\.(aud_[0-9a-f]{32})$/;

/** The audit log for the admin: pages newest first, filtered. Behind `WebhookTriggersAdmin`. */
@Injectable()
export class AdminAuditLog {
  constructor(private readonly log: AuditLog) {}

  async listAuditLog(filter: AuditFilter = {}): Promise<AuditPage> {
    const query = auditQuery(filter);
    // One more than the page, to know whether another page follows.
    const rows = await this.log.list({ ...query, limit: query.limit + 1 });
    const entries = rows.slice(0, query.limit);
    const last = entries[entries.length - 1];
    return { entries, next: rows.length > query.limit && last ? `${last.at.getTime()}.${last.id}` : null };
  }
}

/** The filter checked field by field (each refusal names the query parameter the admin API reads it from). */
function auditQuery(filter: AuditFilter): AuditQuery {
  const bad = (field: string, problem: string) => new WebhookAdminInputError(BAD_ADMIN_FIELD(field, problem));
  if (typeof filter !== 'object' || filter === null) throw bad('filter', 'an object such as { limit: 50 }');
  const limit = filter.limit ?? AUDIT_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > AUDIT_PAGE_MAX) throw bad('limit', `a whole number from 1 to ${AUDIT_PAGE_MAX}`);
  const query: AuditQuery = { limit };
  if (filter.action !== undefined) {
    if (!(AUDIT_ACTIONS as readonly string[]).includes(filter.action)) throw bad('action', `one of ${AUDIT_ACTIONS.join(', ')}`);
    query.action = filter.action;
  }
  for (const field of ['triggerId', 'principal'] as const) {
    const value = filter[field];
    if (value === undefined) continue;
    if (typeof value !== 'string' || !PLAIN_TEXT_200.test(value)) throw bad(field, '1 to 200 characters without control characters');
    query[field] = value;
  }
  for (const field of ['from', 'to'] as const) {
    const value = filter[field];
    if (value === undefined) continue;
    if (!(value instanceof Date && Number.isFinite(value.getTime()))) throw bad(field, 'an ISO 8601 time');
    query[field] = value;
  }
  if (filter.cursor !== undefined) {
    const cursor = typeof filter.cursor === 'string' ? CURSOR.exec(filter.cursor) : null;
    if (!cursor) throw bad('cursor', 'the next of the previous page');
    query.after = { at: new Date(Number(cursor[1])), id: cursor[2] };
  }
  return query;
}
