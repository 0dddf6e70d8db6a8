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
/** `inv_` + 16 random bytes (22 base64url characters): unguessable, so ids alone reveal nothing. */
export const newInvocationId = (): string => 'inv_' + pooledRandom(16).toString('base64url');
