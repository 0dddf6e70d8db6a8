/**
 * Where the browser suites find Chromium, and whether they can run. No imports of other test files: Jest's
 * globalSetup (global-setup.ts) loads this without the suites' module mapping.
 */
import { existsSync } from 'node:fs';

/** `WEBHOOK_TEST_CHROMIUM`, or Debian's /usr/bin/chromium. */
export const CHROMIUM_PATH = process.env.WEBHOOK_TEST_CHROMIUM?.trim() || '/usr/bin/chromium';

/**
 * Why the browser suites cannot run here, or undefined when they can. With `CI` set a missing Chromium is an
 * error (thrown), never a quiet skip.
 */
export function browserTestsBlocker(): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  const problem = `Chromium not found at ${CHROMIUM_PATH}; install it with apt-get install -y chromium (or set WEBHOOK_TEST_CHROMIUM)`;
  if (process.env.CI) throw new Error(`${problem}. CI is set, so the browser tests must run.`);
  return problem;
}
