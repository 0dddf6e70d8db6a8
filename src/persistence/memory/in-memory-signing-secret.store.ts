import type { RequestSigning, SigningSecretRecord } from '../records.js';
import { SigningSecretStore } from '../signing-secret-store.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { copyOf, type InMemoryWebhookDatabase } from './in-memory-database.js';

const newestFirst = (a: SigningSecretRecord, b: SigningSecretRecord) =>
  b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/** `SigningSecretStore` on an `InMemoryWebhookDatabase`; the mode lives on the stored trigger, as in SQL. */
export class InMemorySigningSecretStore extends SigningSecretStore {
  constructor(private readonly database: InMemoryWebhookDatabase) {
    super();
  }

  private get secrets(): Map<string, SigningSecretRecord> {
    return this.database.signingSecrets;
  }

  setRequestSigning(triggerId: string, mode: RequestSigning): Promise<boolean> {
    return this.database.write(undefined, () => {
      const trigger = this.database.triggers.get(triggerId);
      if (!trigger || trigger.deletedAt) return false;
      trigger.requestSigning = mode;
      return true;
    });
  }

  insertSecret(secret: SigningSecretRecord, tx?: WebhookTransaction): Promise<void> {
    return this.database.write(tx, (unit) => {
      if (this.secrets.has(secret.id)) throw new Error(`Signing secret ${secret.id} already exists`);
      unit?.remember('signingSecrets', this.secrets, secret.id);
      this.secrets.set(secret.id, copyOf(secret));
    });
  }

  expireOthers(triggerId: string, keepId: string, expiresAt: Date, tx?: WebhookTransaction): Promise<number> {
    return this.database.write(tx, (unit) => {
      let changed = 0;
      for (const s of this.secrets.values()) {
        if (s.triggerId !== triggerId || s.id === keepId || s.revokedAt !== null) continue;
        if (s.expiresAt !== null && s.expiresAt.getTime() <= expiresAt.getTime()) continue;
        unit?.remember('signingSecrets', this.secrets, s.id);
        // Looked up again: remember() may have copied the entry it restores, never the one we change.
        this.secrets.get(s.id)!.expiresAt = new Date(expiresAt.getTime());
        changed++;
      }
      return changed;
    });
  }

  revokeSecret(triggerId: string, id: string, now: Date): Promise<boolean> {
    return this.database.write(undefined, () => {
      const s = this.secrets.get(id);
      if (!s || s.triggerId !== triggerId || s.revokedAt !== null) return false;
      s.revokedAt = new Date(now.getTime());
      return true;
    });
  }

  listSecrets(triggerId: string, limit: number, tx?: WebhookTransaction): Promise<SigningSecretRecord[]> {
    return this.database.read(tx, () =>
      [...this.secrets.values()]
        .filter((s) => s.triggerId === triggerId)
        .sort(newestFirst)
        .slice(0, limit)
        .map((s) => copyOf(s)),
    );
  }

  usableSecrets(triggerId: string, now: Date): Promise<SigningSecretRecord[]> {
    return this.database.read(undefined, () =>
      [...this.secrets.values()]
        .filter((s) => s.triggerId === triggerId && s.revokedAt === null && (s.expiresAt === null || s.expiresAt.getTime() > now.getTime()))
        .sort(newestFirst)
        .map((s) => copyOf(s)),
    );
  }
}
