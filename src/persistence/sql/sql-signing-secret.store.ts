import type { RequestSigning, SigningSecretRecord } from '../records.js';
import { SigningSecretStore } from '../signing-secret-store.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { SqlExecutor } from './sql-executor.js';
import { text } from './sql-rows.js';

const COLUMNS = 'id, trigger_id, secret, created_at, expires_at, revoked_at';

const time = (value: unknown): Date | null => (value === null || value === undefined ? null : new Date(Number(value)));

function toSecret(row: Record<string, unknown>): SigningSecretRecord {
  return {
    id: text(row.id),
    triggerId: text(row.trigger_id),
    secret: text(row.secret),
    createdAt: time(row.created_at)!,
    expiresAt: time(row.expires_at),
    revokedAt: time(row.revoked_at),
  };
}

/** Signing secrets (migration WebhookTriggersSigning1764400000000) and the trigger's `request_signing` column. */
export class SqlSigningSecretStore extends SigningSecretStore {
  constructor(private readonly db: SqlExecutor) {
    super();
  }

  async setRequestSigning(triggerId: string, mode: RequestSigning): Promise<boolean> {
    const { changes } = await this.db.write(`UPDATE webhook_triggers SET request_signing = ? WHERE id = ? AND deleted_at IS NULL`, [
      mode,
      triggerId,
    ]);
    return changes > 0;
  }

  async insertSecret(s: SigningSecretRecord, tx?: WebhookTransaction): Promise<void> {
    await this.db.write(
      `INSERT INTO webhook_trigger_signing_secrets (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`,
      [s.id, s.triggerId, s.secret, s.createdAt.getTime(), s.expiresAt?.getTime() ?? null, s.revokedAt?.getTime() ?? null],
      tx,
    );
  }

  async expireOthers(triggerId: string, keepId: string, expiresAt: Date, tx?: WebhookTransaction): Promise<number> {
    const { changes } = await this.db.write(
      `UPDATE webhook_trigger_signing_secrets SET expires_at = ? WHERE trigger_id = ? AND id <> ? AND revoked_at IS NULL ` +
        `AND (expires_at IS NULL OR expires_at > ?)`,
      [expiresAt.getTime(), triggerId, keepId, expiresAt.getTime()],
      tx,
    );
    return changes;
  }

  async revokeSecret(triggerId: string, id: string, now: Date): Promise<boolean> {
    const { changes } = await this.db.write(
      `UPDATE webhook_trigger_signing_secrets SET revoked_at = ? WHERE id = ? AND trigger_id = ? AND revoked_at IS NULL`,
      [now.getTime(), id, triggerId],
    );
    return changes > 0;
  }

  async listSecrets(triggerId: string, limit: number, tx?: WebhookTransaction): Promise<SigningSecretRecord[]> {
    const { rows } = await this.db.read(
      `SELECT ${COLUMNS} FROM webhook_trigger_signing_secrets WHERE trigger_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`,
      [triggerId, limit],
      tx,
    );
    return rows.map(toSecret);
  }

  async usableSecrets(triggerId: string, now: Date): Promise<SigningSecretRecord[]> {
    const { rows } = await this.db.read(
      `SELECT ${COLUMNS} FROM webhook_trigger_signing_secrets WHERE trigger_id = ? AND revoked_at IS NULL ` +
        `AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at DESC, id DESC`,
      [triggerId, now.getTime()],
    );
    return rows.map(toSecret);
  }
}
