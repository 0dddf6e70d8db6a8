import { createCipheriv, createDecipheriv, createHash, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';

export const KEY_PREFIX = 'whk_';

/** A new trigger key: `whk_` + 32 random bytes, base64url. */
export function generateTriggerKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** SHA-256 hex of a key: what is stored and compared. A fast hash is right here: keys have 256 bits of entropy. */
export function hashTriggerKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Constant-time comparison of a presented key against a stored hash. */
export function verifyTriggerKey(presented: string, storedHash: string): boolean {
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Keys derived from `keySecret`s, so each part (and each app of a test run) pays scrypt's cost once. */
const derivedKeys = new Map<string, Buffer>();

function derivedKeyOf(secret: string): Buffer {
  let key = derivedKeys.get(secret);
  if (!key) {
    key = scryptSync(secret, 'nestjs-webhook-triggers:key-cipher', 32);
    if (derivedKeys.size >= 16) derivedKeys.delete(derivedKeys.keys().next().value!);
    derivedKeys.set(secret, key);
  }
  return key;
}

/** AES-256-GCM with a key derived from the host's `keySecret`, so "View" can show a key again. */
export class TriggerKeyCipher {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = derivedKeyOf(secret);
  }

  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** The plain key, or null when the ciphertext was made with another secret or was tampered with. */
  decrypt(token: string): string | null {
    const [version, iv, tag, body] = token.split('.');
    if (version !== 'v1' || !iv || !tag || body === undefined) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}
