import { newTriggerKeyId } from '../../src/keys/ids.js';
import { hashTriggerKey } from '../../src/keys/trigger-keys.js';
import type { TriggerKeyRecord } from '../../src/persistence/records.js';

/** A key record of `key` for `triggerId`: "Key 1", created now, usable until revoked; `fields` over it. */
export function triggerKeyRecord(triggerId: string, key: string, fields: Partial<TriggerKeyRecord> = {}): TriggerKeyRecord {
  return {
    id: newTriggerKeyId(),
    triggerId,
    label: 'Key 1',
    keyHash: hashTriggerKey(key),
    keyCiphertext: null,
    createdAt: new Date(),
    expiresAt: null,
    rotatedAt: null,
    revokedAt: null,
    lastUsedAt: null,
    ...fields,
  };
}
