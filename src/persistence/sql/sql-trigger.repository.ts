import type { TriggerKeyRecord, TriggerRecord } from '../records.js';
import { type AddKeyOutcome, type AddKeyRules, TriggerRepository } from '../trigger.repository.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { TRIGGER_COLUMNS, TRIGGER_KEY_COLUMNS, toTrigger, toTriggerKey } from './sql-rows.js';
import { SqlExecutor } from './sql-executor.js';

const INSERT_KEY = `INSERT INTO webhook_trigger_keys (${TRIGGER_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const KEYS_NOT_REVOKED = `SELECT ${TRIGGER_KEY_COLUMNS} FROM webhook_trigger_keys WHERE revoked_at IS NULL`;
const KEY_ORDER = 'ORDER BY created_at, id';
const ms = (date: Date | null): number | null => (date === null ? null : date.getTime());

/** The keys grouped by trigger id, in the order read. */
function byTrigger(rows: Record<string, unknown>[]): Map<string, TriggerKeyRecord[]> {
  const keys = new Map<string, TriggerKeyRecord[]>();
  for (const key of rows.map(toTriggerKey)) {
    const list = keys.get(key.triggerId);
    if (list) list.push(key);
    else keys.set(key.triggerId, [key]);
  }
  return keys;
}
/** A JSON list, or NULL for none (every address allowed). */
const allowedIpsColumn = (ips: string[] | undefined): string | null => (ips?.length ? JSON.stringify(ips) : null);

export class SqlTriggerRepository extends TriggerRepository {
  constructor(private readonly db: SqlExecutor) {
    super();
  }

  async findActive(id: string): Promise<TriggerRecord | null> {
    // Both at once (one round trip's wait on PostgreSQL); the keys of a trigger not found are not used.
    const [{ rows }, keys] = await Promise.all([
      this.db.read(`SELECT ${TRIGGER_COLUMNS} FROM webhook_triggers WHERE id = ? AND deleted_at IS NULL`, [id]),
      this.db.read(`${KEYS_NOT_REVOKED} AND trigger_id = ? ${KEY_ORDER}`, [id]),
    ]);
    return rows[0] ? toTrigger(rows[0], keys.rows.map(toTriggerKey)) : null;
  }

  async create(t: TriggerRecord): Promise<void> {
    await this.db.run(async (tx) => {
      await this.db.write(
        `INSERT INTO webhook_triggers (${TRIGGER_COLUMNS}, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
        [t.id, t.botId, t.accountId, t.name, t.type, t.createdAt.getTime(), t.requestSigning ?? 'off', allowedIpsColumn(t.allowedIps)],
        tx,
      );
      for (const key of t.keys) await this.insertKey({ ...key, triggerId: t.id }, tx);
    });
  }

  async listByBot(botId: string): Promise<TriggerRecord[]> {
    const [{ rows }, keys] = await Promise.all([
      this.db.read(`SELECT ${TRIGGER_COLUMNS} FROM webhook_triggers WHERE bot_id = ? AND deleted_at IS NULL ORDER BY created_at, id`, [
        botId,
      ]),
      this.db.read(
        `${KEYS_NOT_REVOKED} AND trigger_id IN (SELECT id FROM webhook_triggers WHERE bot_id = ? AND deleted_at IS NULL) ${KEY_ORDER}`,
        [botId],
      ),
    ]);
    const grouped = byTrigger(keys.rows);
    return rows.map((row) => toTrigger(row, grouped.get(String(row.id)) ?? []));
  }

  addKey(key: TriggerKeyRecord, { now, maxUsable, othersExpireAt }: AddKeyRules): Promise<AddKeyOutcome> {
    return this.db.run(async (tx) => {
      // A write to the trigger's row first: it locks the row (PostgreSQL) until the end, so two adds count in turn.
      const { changes } = await this.db.write(
        `UPDATE webhook_triggers SET id = id WHERE id = ? AND deleted_at IS NULL`,
        [key.triggerId],
        tx,
      );
      if (changes === 0) return 'unknown_trigger';
      const usable = `trigger_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)`;
      const { rows } = await this.db.read(
        `SELECT COUNT(*) AS n FROM webhook_trigger_keys WHERE ${usable}`,
        [key.triggerId, now.getTime()],
        tx,
      );
      const staying = othersExpireAt && othersExpireAt <= now ? 0 : Number(rows[0].n);
      if (staying + 1 > maxUsable) return 'too_many_keys';
      if (othersExpireAt) {
        await this.db.write(
          `UPDATE webhook_trigger_keys SET expires_at = ?, rotated_at = ? WHERE ${usable} AND (expires_at IS NULL OR expires_at > ?)`,
          [othersExpireAt.getTime(), now.getTime(), key.triggerId, now.getTime(), othersExpireAt.getTime()],
          tx,
        );
      }
      await this.insertKey(key, tx);
      return 'added';
    });
  }

  async revokeKey(triggerId: string, keyId: string, at: Date): Promise<boolean> {
    const { changes } = await this.db.write(
      `UPDATE webhook_trigger_keys SET revoked_at = ? WHERE id = ? AND trigger_id = ? AND revoked_at IS NULL
        AND trigger_id IN (SELECT id FROM webhook_triggers WHERE id = ? AND deleted_at IS NULL)`,
      [at.getTime(), keyId, triggerId, triggerId],
    );
    return changes > 0;
  }

  async recordKeyUses(uses: ReadonlyMap<string, Date>): Promise<void> {
    if (uses.size === 0) return;
    await this.db.run(async (tx) => {
      for (const [keyId, at] of uses) {
        await this.db.write(
          `UPDATE webhook_trigger_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
          [at.getTime(), keyId, at.getTime()],
          tx,
        );
      }
    });
  }

  async setAllowedIps(id: string, allowedIps: string[]): Promise<boolean> {
    const { changes } = await this.db.write(`UPDATE webhook_triggers SET allowed_ips = ? WHERE id = ? AND deleted_at IS NULL`, [
      allowedIpsColumn(allowedIps),
      id,
    ]);
    return changes > 0;
  }

  async delete(id: string): Promise<boolean> {
    const { changes } = await this.db.write(`UPDATE webhook_triggers SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL`, [
      Date.now(),
      id,
    ]);
    return changes > 0;
  }

  async assignBotAccount(botId: string, accountId: string): Promise<string[]> {
    const { rows } = await this.db.write(`UPDATE webhook_triggers SET account_id = ? WHERE bot_id = ? AND account_id <> ? RETURNING id`, [
      accountId,
      botId,
      accountId,
    ]);
    return rows.map((r) => String(r.id));
  }

  private async insertKey(k: TriggerKeyRecord, tx: WebhookTransaction): Promise<void> {
    await this.db.write(
      INSERT_KEY,
      [
        k.id,
        k.triggerId,
        k.label,
        k.keyHash,
        k.keyCiphertext,
        k.createdAt.getTime(),
        ms(k.expiresAt),
        ms(k.rotatedAt),
        ms(k.revokedAt),
        ms(k.lastUsedAt),
      ],
      tx,
    );
  }
}
