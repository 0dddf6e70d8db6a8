import { randomBytes } from 'node:crypto';
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
