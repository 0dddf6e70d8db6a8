import type { TriggerRecord } from '../records.js';
import { TriggerRepository } from '../trigger.repository.js';
import { TRIGGER_COLUMNS, toTrigger } from './sql-rows.js';
import { SqlExecutor } from './sql-executor.js';

export class SqlTriggerRepository extends TriggerRepository {
  constructor(private readonly db: SqlExecutor) {
    super();
  }

  async findActive(id: string): Promise<TriggerRecord | null> {
    const { rows } = await this.db.read(`SELECT ${TRIGGER_COLUMNS} FROM webhook_triggers WHERE id = ? AND deleted_at IS NULL`, [id]);
    return rows[0] ? toTrigger(rows[0]) : null;
  }

  async create(t: TriggerRecord): Promise<void> {
    await this.db.write(`INSERT INTO webhook_triggers (${TRIGGER_COLUMNS}, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`, [
      t.id,
      t.botId,
      t.accountId,
      t.name,
      t.type,
      t.keyHash,
      t.keyCiphertext,
      t.createdAt.getTime(),
      t.requestSigning ?? 'off',
    ]);
  }

  async listByBot(botId: string): Promise<TriggerRecord[]> {
    const { rows } = await this.db.read(
      `SELECT ${TRIGGER_COLUMNS} FROM webhook_triggers WHERE bot_id = ? AND deleted_at IS NULL ORDER BY created_at, id`,
      [botId],
    );
    return rows.map(toTrigger);
  }

  async replaceKey(id: string, keyHash: string, keyCiphertext: string | null): Promise<boolean> {
    const { changes } = await this.db.write(
      `UPDATE webhook_triggers SET key_hash = ?, key_ciphertext = ? WHERE id = ? AND deleted_at IS NULL`,
      [keyHash, keyCiphertext, id],
    );
    return changes > 0;
  }

  async delete(id: string): Promise<boolean> {
    const { changes } = await this.db.write(`UPDATE webhook_triggers SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL`, [
      Date.now(),
      id,
    ]);
    return changes > 0;
  }
}
