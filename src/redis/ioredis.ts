import type { Redis as RedisClient, RedisOptions } from 'ioredis';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { MISSING_PACKAGE } from '../errors/webhook-trigger.messages.js';

/**
 * A client of the optional peer `ioredis`, loaded only when a Redis part is actually chosen, so hosts
 * that stay in one process never need the package. `part` names the user of it in the error.
 */
export function createRedisClient(part: string, url: string, options: RedisOptions): RedisClient {
  let Redis: new (url: string, options: RedisOptions) => RedisClient;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the optional peer is loaded only when a Redis part is chosen
    const mod = require('ioredis') as { default?: unknown; Redis?: unknown };
    Redis = (mod.Redis ?? mod.default ?? mod) as typeof Redis;
  } catch {
    throw new WebhookConfigurationError(MISSING_PACKAGE(part, 'ioredis@5'));
  }
  return new Redis(url, options);
}

/** The url without its password, for messages. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'invalid url';
  }
}
