import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { Client } from 'pg';

/**
 * Service-backed suites read their service URL from the environment. In CI a missing URL is a failure;
 * on a laptop the suite shows up as a "todo" line in Jest's summary naming the variable, never as a pass.
 */
export function serviceUrl(name: 'WEBHOOK_TEST_POSTGRES_URL' | 'WEBHOOK_TEST_REDIS_URL'): string | undefined {
  const url = process.env[name];
  if (!url && process.env.CI) throw new Error(`${name} must be set in CI: the service-backed suites may not be skipped there`);
  return url;
}

/** A fresh, empty database on the server of `baseUrl`; drop it with the returned function. */
export async function createScratchDatabase(baseUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `webhook_test_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new Client({ connectionString: baseUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** Deletes every key under `prefix` on the Redis of `url` (SCAN, so it never blocks the server). */
export async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    await redis.quit();
  }
}
