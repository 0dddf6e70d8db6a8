import { randomBytes, randomFillSync } from 'node:crypto';

export const TRIGGER_ID_PATTERN = /^trg_[A-Za-z0-9_-]{16}$/;
export const TRIGGER_KEY_ID_PATTERN = /^key_[A-Za-z0-9_-]{16}$/;
export const INVOCATION_ID_PATTERN = /^inv_[A-Za-z0-9_-]{22}$/;
/**
 * 1–200 characters without control characters: account ids and trigger names (PostgreSQL refuses a NUL
 * in text, and the columns hold 200).
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
export const PLAIN_TEXT_200 = /^[^\x00-\x1f\x7f]{1,200}$/;
export const ACCOUNT_ID_PATTERN = PLAIN_TEXT_200;
/** An admin search: an invocation id or an idempotency key (1–255 visible ASCII characters). */
// eslint-disable-next-line no-control-regex -- as above
export const PLAIN_TEXT_255 = /^[^\x00-\x1f\x7f]{1,255}$/;

/**
 * Random bytes drawn from a 4 KiB pool refilled in one call: an id per request would otherwise be a
 * separate trip into the kernel's random source (it showed up at ~7% of the trigger path's CPU).
 */
const pool = Buffer.allocUnsafe(4096);
let offset = pool.length;

function pooledRandom(size: number): Buffer {
  if (offset + size > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = Buffer.from(pool.subarray(offset, offset + size));
  offset += size;
  return bytes;
}

/** `trg_` + 12 random bytes (16 base64url characters). */
export const newTriggerId = (): string => 'trg_' + randomBytes(12).toString('base64url');
/** `key_` + 12 random bytes (16 base64url characters): one key of a trigger, named in the screens and the admin API. */
export const newTriggerKeyId = (): string => 'key_' + randomBytes(12).toString('base64url');
/** base64url's 64 digits, and the same digits' characters in ASCII order: an id written with those compares as its bytes do. */
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const SORTABLE_BASE64 = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';
/** By a base64url character's code, the sortable character of the same digit. */
const TO_SORTABLE: string[] = [];
for (let digit = 0; digit < 64; digit++) TO_SORTABLE[BASE64URL.charCodeAt(digit)] = SORTABLE_BASE64[digit];

/**
 * `inv_` + 16 bytes in 22 characters of base64url's alphabet (in ASCII order): 6 bytes of the creation time in
 * milliseconds (big-endian), then 10 random bytes. Unguessable (80 random bits; a run's id is only ever used with
 * its trigger's key) and, unlike 16 random bytes, in creation order: each new run's primary-key entry lands beside
 * the last one's, so a group commit writes a page or two of that index instead of one page per run (on SQLite,
 * half the COMMIT's time: bench/README.md, "Time-ordered invocation ids"). The id tells when the run was created,
 * as its status does to the key holder.
 */
export function newInvocationId(nowMs: number = Date.now()): string {
  const bytes = pooledRandom(16);
  bytes.writeUIntBE(Math.max(0, Math.min(Math.floor(nowMs), 0xffff_ffff_ffff)), 0, 6);
  const digits = bytes.toString('base64url');
  let id = 'inv_';
  for (let i = 0; i < digits.length; i++) id += TO_SORTABLE[digits.charCodeAt(i)];
  return id;
}
