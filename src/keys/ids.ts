import { randomBytes } from 'node:crypto';

/** `trg_` + 12 random bytes (16 base64url characters). */
export const newTriggerId = (): string => 'trg_' + randomBytes(12).toString('base64url');
/** `inv_` + 16 random bytes (22 base64url characters): unguessable, so ids alone reveal nothing. */
export const newInvocationId = (): string => 'inv_' + randomBytes(16).toString('base64url');
