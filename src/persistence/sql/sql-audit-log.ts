import { type AuditDetails, type AuditEntry, AuditLog, type AuditQuery } from '../audit-log.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { SqlExecutor } from './sql-executor.js';
import { nullableText, text } from './sql-rows.js';

const COLUMNS = 'id, at, action, trigger_id, invocation_id, account_id, principal, details';

function toEntry(row: Record<string, unknown>): AuditEntry {
  return {
    id: text(row.id),
    at: new Date(Number(row.at)),
    action: text(row.action),
    triggerId: nullableText(row.trigger_id),
    invocationId: nullableText(row.invocation_id),
    accountId: nullableText(row.account_id),
    principal: nullableText(row.principal),
    details: JSON.parse(text(row.details)) as AuditDetails,
  };
}

/** The `webhook_audit_log` table (migration WebhookTriggersAudit): newest first by `(at, id)`, paged by keyset. */
export class SqlAuditLog extends AuditLog {
  constructor(private readonly db: SqlExecutor) {
    super();
  }

  async append(e: AuditEntry, tx?: WebhookTransaction): Promise<void> {
    await this.db.write(
      `INSERT INTO webhook_audit_log (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [e.id, e.at.getTime(), e.action, e.triggerId, e.invocationId, e.accountId, e.principal, JSON.stringify(e.details)],
      tx,
    );
  }

  async list(query: AuditQuery): Promise<AuditEntry[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: string, ...values: unknown[]) => {
      where.push(sql);
      params.push(...values);
    };
    if (query.action !== undefined) add('action = ?', query.action);
    if (query.triggerId !== undefined) add('trigger_id = ?', query.triggerId);
    if (query.principal !== undefined) add('principal = ?', query.principal);
    if (query.from !== undefined) add('at >= ?', query.from.getTime());
    if (query.to !== undefined) add('at < ?', query.to.getTime());
    // A row value, so both databases seek the (at, id) index to the cursor.
    if (query.after !== undefined) add('(at, id) < (?, ?)', query.after.at.getTime(), query.after.id);
    const { rows } = await this.db.read(
      `SELECT ${COLUMNS} FROM webhook_audit_log${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY at DESC, id DESC LIMIT ?`,
      [...params, query.limit],
    );
    return rows.map(toEntry);
  }

  async deleteOlderThan(before: Date): Promise<number> {
    const { changes } = await this.db.write(`DELETE FROM webhook_audit_log WHERE at < ?`, [before.getTime()]);
    return changes;
  }
}
