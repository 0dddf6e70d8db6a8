import { generateTriggerKey, hashTriggerKey, matchTriggerKey, TriggerKeyCipher } from './trigger-keys.js';

/** Whether `presented` opens a trigger whose one key is stored as `storedHash`. */
const opensOneKey = (presented: string, storedHash: string) =>
  matchTriggerKey(presented, [{ id: 'key', keyHash: storedHash, expiresAt: null, revokedAt: null }], 0) !== null;

describe('trigger keys', () => {
  it('are whk_ followed by 43 base64url characters (32 random bytes), never repeating', () => {
    const keys = Array.from({ length: 1000 }, generateTriggerKey);
    for (const key of keys) {
      expect(key).toMatch(/^whk_[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(key.slice(4), 'base64url')).toHaveLength(32);
    }
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('hash to 64 hex characters, the same every time, and never contain the key', () => {
    const key = generateTriggerKey();
    const hash = hashTriggerKey(key);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hashTriggerKey(key)).toBe(hash);
    expect(hashTriggerKey(generateTriggerKey())).not.toBe(hash);
    expect(hash).not.toContain(key.slice(4, 20));
  });

  it('verify only the key that was hashed', () => {
    const key = generateTriggerKey();
    const hash = hashTriggerKey(key);
    expect(opensOneKey(key, hash)).toBe(true);
    expect(opensOneKey(generateTriggerKey(), hash)).toBe(false);
    expect(opensOneKey(key.slice(0, -1), hash)).toBe(false);
    expect(opensOneKey(key + 'A', hash)).toBe(false);
    expect(opensOneKey(key.toLowerCase() === key ? key.toUpperCase() : key.toLowerCase(), hash)).toBe(false);
    expect(opensOneKey('', hash)).toBe(false);
  });

  it("compare the whole hash: a stored hash one byte away from the key's, first, middle or last, is refused", () => {
    const key = generateTriggerKey();
    const hash = Buffer.from(hashTriggerKey(key), 'hex');
    for (const at of [0, 3, 4, 16, 31]) {
      const other = Buffer.from(hash);
      other[at] ^= 1;
      expect(opensOneKey(key, other.toString('hex'))).toBe(false);
    }
    expect(opensOneKey(key, hash.toString('hex'))).toBe(true);
  });

  it('refuse, without throwing, a stored hash of the wrong length or not hex', () => {
    const key = generateTriggerKey();
    const hash = hashTriggerKey(key);
    for (const stored of ['', hash.slice(0, 62), hash + '00', 'zz'.repeat(32), hash.slice(0, 32)]) {
      expect(opensOneKey(key, stored)).toBe(false);
    }
  });
});

describe('TriggerKeyCipher', () => {
  const secret = 'a host secret of enough length';

  it('decrypts what it encrypted, with a fresh IV every time and no key visible in the token', () => {
    const cipher = new TriggerKeyCipher(secret);
    const key = generateTriggerKey();
    const a = cipher.encrypt(key);
    const b = cipher.encrypt(key);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(a).not.toContain(key.slice(4));
    expect(cipher.decrypt(a)).toBe(key);
    expect(cipher.decrypt(b)).toBe(key);
    // A second instance with the same secret (e.g. after a restart) reads old tokens.
    expect(new TriggerKeyCipher(secret).decrypt(a)).toBe(key);
  });

  it('answers null for a token made with another secret', () => {
    const token = new TriggerKeyCipher(secret).encrypt(generateTriggerKey());
    expect(new TriggerKeyCipher('another secret, same length!!').decrypt(token)).toBeNull();
  });

  it('answers null for a tampered or malformed token', () => {
    const cipher = new TriggerKeyCipher(secret);
    const token = cipher.encrypt(generateTriggerKey());
    const [version, iv, tag, body] = token.split('.');
    const flip = (part: string) => {
      const bytes = Buffer.from(part, 'base64url');
      bytes[0] ^= 1;
      return bytes.toString('base64url');
    };
    for (const bad of [
      [version, iv, tag, flip(body)].join('.'),
      [version, iv, flip(tag), body].join('.'),
      [version, flip(iv), tag, body].join('.'),
      ['v2', iv, tag, body].join('.'),
      [version, iv, tag].join('.'),
      [version, iv, '', body].join('.'),
      '',
      'garbage',
    ]) {
      expect(cipher.decrypt(bad)).toBeNull();
    }
  });
});

describe('matchTriggerKey', () => {
  const keys = ['whk_one', 'whk_two', 'whk_three'];
  const record = (key: string, n: number, expiresAt: number | null = null) => ({
    id: `key_${n}`,
    keyHash: hashTriggerKey(key),
    expiresAt: expiresAt === null ? null : new Date(expiresAt),
    revokedAt: null,
  });

  it('names whichever of the usable keys was presented, and null for any other', () => {
    const stored = keys.map((key, i) => record(key, i));
    keys.forEach((key, i) => expect(matchTriggerKey(key, stored, 1000)).toBe(`key_${i}`));
    expect(matchTriggerKey('whk_four', stored, 1000)).toBeNull();
    expect(matchTriggerKey('', stored, 1000)).toBeNull();
    expect(matchTriggerKey('whk_one', [], 1000)).toBeNull();
  });

  it('refuses a key from its expiry on (judged at `now`), and a revoked one', () => {
    const stored = [record('whk_one', 1, 5000), record('whk_two', 2)];
    expect(matchTriggerKey('whk_one', stored, 4999)).toBe('key_1');
    expect(matchTriggerKey('whk_one', stored, 5000)).toBeNull();
    expect(matchTriggerKey('whk_two', stored, 5000)).toBe('key_2');
    expect(matchTriggerKey('whk_two', [{ ...record('whk_two', 2), revokedAt: new Date(1) }], 0)).toBeNull();
  });

  it('takes a usable key even when an expired copy of the same hash comes first', () => {
    expect(matchTriggerKey('whk_one', [record('whk_one', 1, 10), record('whk_one', 2)], 100)).toBe('key_2');
  });
});
