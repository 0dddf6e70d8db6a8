/** What the sample app's admin sign-in needs (`AdminAuthModule.forRoot`). */
export interface AdminAuthOptions {
  /** ADMIN_TOKEN: the Bearer token, the sign-in form's password, and the key that signs session cookies. */
  adminToken: string;
  /** Wrong tokens allowed per client IP in a sliding window. @default { limit: 10, windowMs: 60_000 } */
  wrongTokens?: { limit: number; windowMs: number };
  /** REDIS_URL: where sign-outs are recorded so that every node refuses a signed-out session; unset: this process only. */
  redisUrl?: string;
  /** REDIS_KEY_PREFIX: prefix of the Redis keys. @default 'sample-app:' */
  redisKeyPrefix?: string;
}

/** Injection token of the `AdminAuthOptions`. */
export const ADMIN_AUTH_OPTIONS = Symbol('ADMIN_AUTH_OPTIONS');
