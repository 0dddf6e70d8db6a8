import { createCipheriv, createDecipheriv, createHash, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';

const KEY_PREFIX = 'whk_';

/** A new trigger key: `whk_` + 32 random bytes, base64url. */
export function generateTriggerKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** SHA-256 hex of a key: what is stored and compared. A fast hash is right here: keys have 256 bits of entropy. */
export function hashTriggerKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** What the check reads of a stored key (a `TriggerKeyRecord`; keys/ imports nothing of persistence/). */
export interface CheckedKey {
  id: string;
  keyHash: string;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** Most usable (not revoked, not expired) keys a trigger may have at once. */
export const MAX_USABLE_KEYS = 10;

/** Whether a key opens its trigger at `now` (ms): not revoked, not yet expired. */
export function isUsableKey(key: Pick<CheckedKey, 'expiresAt' | 'revokedAt'>, now: number): boolean {
  return key.revokedAt === null && (key.expiresAt === null || key.expiresAt.getTime() > now);
}

/**
 * The id of the usable key (see `isUsableKey`) that `presented` is, or null. Constant time in what an attacker
 * controls: the presented key is hashed once and compared with `timingSafeEqual` against every key's hash,
 * usable or not, with no early exit; only the number of the trigger's keys shows in the time it takes.
 */
export function matchTriggerKey(presented: string, keys: readonly CheckedKey[], now: number): string | null {
  const hash = createHash('sha256').update(presented, 'utf8').digest();
  let matched: string | null = null;
  for (const key of keys) {
    const stored = Buffer.from(key.keyHash, 'hex');
    const equal = stored.length === hash.length && timingSafeEqual(hash, stored);
    if (equal && matched === null && isUsableKey(key, now)) matched = key.id;
  }
  return matched;
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
