import type { RequestSigning, SigningSecretRecord } from './records.js';
import type { WebhookTransaction } from './unit-of-work.js';

/**
 * Triggers' signed-request settings and their signing secrets (the table `webhook_trigger_signing_secrets`
 * and the `request_signing` column of `webhook_triggers`). A rotation is `insertSecret` + `expireOthers` in one
 * unit of work (`tx`), so a sender never sees a moment with the new secret stored and the old ones unbounded.
 */
export abstract class SigningSecretStore {
  /** Sets a trigger's mode; false when the trigger is unknown or deleted. */
  abstract setRequestSigning(triggerId: string, mode: RequestSigning): Promise<boolean>;
  abstract insertSecret(secret: SigningSecretRecord, tx?: WebhookTransaction): Promise<void>;
  /**
   * Ends every other secret of the trigger at `expiresAt` (those not revoked and not already ending sooner);
   * returns how many changed.
   */
  abstract expireOthers(triggerId: string, keepId: string, expiresAt: Date, tx?: WebhookTransaction): Promise<number>;
  /** Revokes one secret of the trigger at `now`; false when unknown, another trigger's, or already revoked. */
  abstract revokeSecret(triggerId: string, id: string, now: Date): Promise<boolean>;
  /** The trigger's secrets, newest first (ties by id), at most `limit`. */
  abstract listSecrets(triggerId: string, limit: number, tx?: WebhookTransaction): Promise<SigningSecretRecord[]>;
  /** The secrets a request may be signed with at `now`: not revoked, not expired (`expiresAt` > now). */
  abstract usableSecrets(triggerId: string, now: Date): Promise<SigningSecretRecord[]>;
}
