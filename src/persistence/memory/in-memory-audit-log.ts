import { type AuditEntry, AuditLog, type AuditQuery } from '../audit-log.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { copyOf, type InMemoryWebhookDatabase } from './in-memory-database.js';

/** Newest first: `at`, then `id`, both descending (as the SQL store orders them). */
const newestFirst = (a: AuditEntry, b: AuditEntry) => b.at.getTime() - a.at.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/** `AuditLog` on an `InMemoryWebhookDatabase`. */
export class InMemoryAuditLog extends AuditLog {
  constructor(private readonly database: InMemoryWebhookDatabase) {
    super();
  }

  append(entry: AuditEntry, tx?: WebhookTransaction): Promise<void> {
    return this.database.write(tx, (unit) => {
      const entries = this.database.auditEntries;
      if (entries.has(entry.id)) throw new Error(`Audit entry ${entry.id} already exists`);
      unit?.remember('audit', entries, entry.id);
      entries.set(entry.id, copyOf(entry));
    });
  }

  async list(query: AuditQuery): Promise<AuditEntry[]> {
    const after = query.after;
    return [...this.database.auditEntries.values()]
      .filter(
        (e) =>
          (query.action === undefined || e.action === query.action) &&
          (query.triggerId === undefined || e.triggerId === query.triggerId) &&
          (query.principal === undefined || e.principal === query.principal) &&
          (query.from === undefined || e.at.getTime() >= query.from.getTime()) &&
          (query.to === undefined || e.at.getTime() < query.to.getTime()) &&
          (after === undefined || e.at.getTime() < after.at.getTime() || (e.at.getTime() === after.at.getTime() && e.id < after.id)),
      )
      .sort(newestFirst)
      .slice(0, query.limit)
      .map((e) => copyOf(e));
  }

  deleteOlderThan(before: Date): Promise<number> {
    return this.database.write(undefined, () => {
      let deleted = 0;
      for (const [id, e] of this.database.auditEntries) {
        if (e.at.getTime() < before.getTime()) deleted += Number(this.database.auditEntries.delete(id));
      }
      return deleted;
    });
  }
}
