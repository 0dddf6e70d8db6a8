import type { AttemptResult, CallbackEvent, CallbackRecord, DeliveryRecord, DeliveryStatus } from '../records.js';
import { CallbackStore, type DueDelivery, type NewCallback } from '../callback-store.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { SqlExecutor } from './sql-executor.js';
import { nullableText, text } from './sql-rows.js';

const CALLBACK_COLUMNS = 'trigger_id, url, events, secret, enabled, consecutive_failures, disabled_reason, created_at, updated_at';
const DELIVERY_COLUMNS =
  'id, trigger_id, invocation_id, event, msg_id, body, status, attempts, next_attempt_at, last_attempt_at, response_status, latency_ms, last_error, created_at, trace_context';
/** The delivery log's columns: everything but the body. */
const LOG_COLUMNS = DELIVERY_COLUMNS.replace(' body,', '');

const time = (value: unknown): Date | null => (value === null || value === undefined ? null : new Date(Number(value)));
const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

function toCallback(row: Record<string, unknown>): CallbackRecord {
  return {
    triggerId: text(row.trigger_id),
    url: text(row.url),
    events: String(row.events as string)
      .split(',')
      .filter(Boolean) as CallbackEvent[],
    secret: text(row.secret),
    enabled: Number(row.enabled) === 1,
    consecutiveFailures: Number(row.consecutive_failures),
    disabledReason: nullableText(row.disabled_reason),
    createdAt: time(row.created_at)!,
    updatedAt: time(row.updated_at)!,
  };
}

function toDelivery(row: Record<string, unknown>): DeliveryRecord {
  return {
    id: text(row.id),
    triggerId: text(row.trigger_id),
    invocationId: text(row.invocation_id),
    event: row.event as CallbackEvent,
    msgId: text(row.msg_id),
    body: row.body === undefined ? '' : text(row.body),
    status: row.status as DeliveryStatus,
    attempts: Number(row.attempts),
    nextAttemptAt: time(row.next_attempt_at),
    lastAttemptAt: time(row.last_attempt_at),
    responseStatus: num(row.response_status),
    latencyMs: num(row.latency_ms),
    lastError: nullableText(row.last_error),
    createdAt: time(row.created_at)!,
    traceContext: nullableText(row.trace_context),
  };
}

/**
 * The callbacks' tables (migration WebhookTriggersCallbacks). Deliveries join a unit of work's
 * transaction (`tx`) so a run's terminal state and its `invocation.completed` delivery commit together.
 */
export class SqlCallbackStore extends CallbackStore {
  constructor(private readonly db: SqlExecutor) {
    super();
  }

  async findCallback(triggerId: string, tx?: WebhookTransaction): Promise<CallbackRecord | null> {
    const { rows } = await this.db.read(`SELECT ${CALLBACK_COLUMNS} FROM webhook_callbacks WHERE trigger_id = ?`, [triggerId], tx);
    return rows[0] ? toCallback(rows[0]) : null;
  }

  /** Creates or replaces a trigger's callback (enabled, no failures): what the admin's PUT does. */
  async saveCallback(c: NewCallback, now: Date): Promise<void> {
    const events = c.events.join(',');
    const { changes } = await this.db.write(
      `UPDATE webhook_callbacks SET url = ?, events = ?, secret = ?, enabled = 1, consecutive_failures = 0, disabled_reason = NULL, updated_at = ? WHERE trigger_id = ?`,
      [c.url, events, c.secret, now.getTime(), c.triggerId],
    );
    if (changes === 1) return;
    await this.db.write(`INSERT INTO webhook_callbacks (${CALLBACK_COLUMNS}) VALUES (?, ?, ?, ?, 1, 0, NULL, ?, ?)`, [
      c.triggerId,
      c.url,
      events,
      c.secret,
      now.getTime(),
      now.getTime(),
    ]);
  }

  async replaceSecret(triggerId: string, secret: string, now: Date): Promise<boolean> {
    const { changes } = await this.db.write(`UPDATE webhook_callbacks SET secret = ?, updated_at = ? WHERE trigger_id = ?`, [
      secret,
      now.getTime(),
      triggerId,
    ]);
    return changes === 1;
  }

  async deleteCallback(triggerId: string): Promise<boolean> {
    const { changes } = await this.db.write(`DELETE FROM webhook_callbacks WHERE trigger_id = ?`, [triggerId]);
    return changes === 1;
  }

  /** A delivered attempt: the run of failures ends. */
  async resetFailures(triggerId: string): Promise<void> {
    await this.db.write(`UPDATE webhook_callbacks SET consecutive_failures = 0 WHERE trigger_id = ? AND consecutive_failures <> 0`, [
      triggerId,
    ]);
  }

  /** One more delivery gave up; returns the new count (null when the callback is gone). */
  async countFailure(triggerId: string): Promise<number | null> {
    const { rows } = await this.db.write(
      `UPDATE webhook_callbacks SET consecutive_failures = consecutive_failures + 1 WHERE trigger_id = ? RETURNING consecutive_failures`,
      [triggerId],
    );
    return rows[0] ? Number(rows[0].consecutive_failures) : null;
  }

  /** Disables an enabled callback; true for the caller that disabled it (so the event is emitted once). */
  async disable(triggerId: string, reason: string, now: Date): Promise<boolean> {
    const { changes } = await this.db.write(
      `UPDATE webhook_callbacks SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE trigger_id = ? AND enabled = 1`,
      [reason.slice(0, 500), now.getTime(), triggerId],
    );
    return changes === 1;
  }

  async insertDelivery(d: DeliveryRecord, tx?: WebhookTransaction): Promise<void> {
    await this.db.write(
      `INSERT INTO webhook_callback_deliveries (${DELIVERY_COLUMNS}, owner, lease_expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, ?, ?, NULL, NULL)`,
      [
        d.id,
        d.triggerId,
        d.invocationId,
        d.event,
        d.msgId,
        d.body,
        d.status,
        d.attempts,
        d.nextAttemptAt?.getTime() ?? null,
        d.createdAt.getTime(),
        d.traceContext ?? null,
      ],
      tx,
    );
  }

  async findDelivery(id: string): Promise<DeliveryRecord | null> {
    const { rows } = await this.db.read(`SELECT ${DELIVERY_COLUMNS} FROM webhook_callback_deliveries WHERE id = ?`, [id]);
    return rows[0] ? toDelivery(rows[0]) : null;
  }

  /**
   * Claims a due delivery for one attempt: conditional on it being pending, due, and not held by a live
   * sender (no owner, or its lease ran out). Null when another process holds it or it is not due.
   */
  async claim(id: string, owner: string, now: Date, leaseExpiresAt: Date): Promise<DeliveryRecord | null> {
    const { rows } = await this.db.write(
      `UPDATE webhook_callback_deliveries SET owner = ?, lease_expires_at = ? WHERE id = ? AND status = 'pending' AND next_attempt_at <= ? ` +
        `AND (owner IS NULL OR lease_expires_at < ?) RETURNING ${DELIVERY_COLUMNS}`,
      [owner, leaseExpiresAt.getTime(), id, now.getTime(), now.getTime()],
    );
    return rows[0] ? toDelivery(rows[0]) : null;
  }

  /** Records an attempt and releases the claim; false when this owner no longer held it. */
  async recordAttempt(id: string, owner: string, r: AttemptResult): Promise<boolean> {
    const { changes } = await this.db.write(
      `UPDATE webhook_callback_deliveries SET status = ?, attempts = attempts + 1, last_attempt_at = ?, next_attempt_at = ?, response_status = ?, ` +
        `latency_ms = ?, last_error = ?, owner = NULL, lease_expires_at = NULL WHERE id = ? AND owner = ? AND status = 'pending'`,
      [
        r.status,
        r.attemptedAt.getTime(),
        r.nextAttemptAt?.getTime() ?? null,
        r.responseStatus,
        r.latencyMs,
        r.error?.slice(0, 1000) ?? null,
        id,
        owner,
      ],
    );
    return changes === 1;
  }

  /** Ends a pending delivery without an attempt (its callback was deleted or disabled). */
  async abandon(id: string, owner: string, error: string): Promise<void> {
    await this.db.write(
      `UPDATE webhook_callback_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = ?, owner = NULL, lease_expires_at = NULL WHERE id = ? AND owner = ?`,
      [error.slice(0, 1000), id, owner],
    );
  }

  /** Makes a delivery due again now, whatever its status (the admin's redeliver); false when unknown. */
  async redeliver(id: string, now: Date): Promise<boolean> {
    // The claim is left as it is: an attempt in flight keeps it, so no second sender starts the same delivery.
    const { changes } = await this.db.write(`UPDATE webhook_callback_deliveries SET status = 'pending', next_attempt_at = ? WHERE id = ?`, [
      now.getTime(),
      id,
    ]);
    return changes === 1;
  }

  /**
   * Pending deliveries due by `now` and not held by a live sender, oldest due first, none of `skipTriggers` nor of
   * the triggers of `skipAccounts` (those whose callbacks already have their attempts in flight in the sender: their
   * backlog cannot fill the page). Each with its trigger's account (a deleted trigger's row stays; none without a row).
   */
  async listDue(
    now: Date,
    limit: number,
    skipTriggers: readonly string[] = [],
    skipAccounts: readonly string[] = [],
  ): Promise<DueDelivery[]> {
    const list = (values: readonly string[]) => values.map(() => '?').join(', ');
    const skip =
      (skipTriggers.length > 0 ? `AND d.trigger_id NOT IN (${list(skipTriggers)}) ` : '') +
      (skipAccounts.length > 0 ? `AND (t.account_id IS NULL OR t.account_id NOT IN (${list(skipAccounts)})) ` : '');
    const { rows } = await this.db.read(
      `SELECT d.id, d.trigger_id, t.account_id FROM webhook_callback_deliveries d LEFT JOIN webhook_triggers t ON t.id = d.trigger_id ` +
        `WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.owner IS NULL OR d.lease_expires_at < ?) ` +
        `${skip}ORDER BY d.next_attempt_at LIMIT ?`,
      [now.getTime(), now.getTime(), ...skipTriggers, ...skipAccounts, limit],
    );
    return rows.map((r) => ({
      id: text(r.id),
      triggerId: text(r.trigger_id),
      ...(r.account_id == null ? {} : { accountId: text(r.account_id) }),
    }));
  }

  /** Deletes delivered and failed deliveries created before `before` (retention); returns how many. */
  async deleteFinishedBefore(before: Date): Promise<number> {
    const { changes } = await this.db.write(
      `DELETE FROM webhook_callback_deliveries WHERE created_at < ? AND status IN ('delivered', 'failed')`,
      [before.getTime()],
    );
    return changes;
  }

  /** A trigger's deliveries, newest first (without their bodies). */
  async listByTrigger(triggerId: string, limit: number): Promise<DeliveryRecord[]> {
    const { rows } = await this.db.read(
      `SELECT ${LOG_COLUMNS} FROM webhook_callback_deliveries WHERE trigger_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`,
      [triggerId, limit],
    );
    return rows.map(toDelivery);
  }

  /** A run's deliveries, oldest first (without their bodies). */
  async listByInvocation(invocationId: string, tx?: WebhookTransaction): Promise<DeliveryRecord[]> {
    const { rows } = await this.db.read(
      `SELECT ${LOG_COLUMNS} FROM webhook_callback_deliveries WHERE invocation_id = ? ORDER BY created_at, id`,
      [invocationId],
      tx,
    );
    return rows.map(toDelivery);
  }
}
