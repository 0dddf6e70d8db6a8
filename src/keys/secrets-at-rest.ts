import { TriggerKeyCipher } from './trigger-keys.js';

/**
 * A `whsec_…` secret at rest, a trigger's callback secret or one of its signing secrets: AES-256-GCM with
 * `keySecret` when the host set one (the key cipher of trigger keys), else the secret itself (it must stay
 * readable to sign and verify); `shown` tells whether it may be shown again.
 */
export class SecretsAtRest {
  private readonly cipher: TriggerKeyCipher | null;

  constructor(keySecret: string | undefined) {
    this.cipher = keySecret ? new TriggerKeyCipher(keySecret) : null;
  }

  /** True when a stored secret can be shown again (`keySecret` set). */
  get shown(): boolean {
    return this.cipher !== null;
  }

  seal(secret: string): string {
    return this.cipher ? this.cipher.encrypt(secret) : secret;
  }

  /** The secret, or null when it was sealed with another `keySecret` (or none is set now). */
  open(stored: string): string | null {
    if (stored.startsWith('whsec_')) return stored;
    return this.cipher ? this.cipher.decrypt(stored) : null;
  }
}
