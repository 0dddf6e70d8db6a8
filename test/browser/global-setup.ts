/**
 * Jest globalSetup of the `browser` project (jest.config.js): says once, plainly, when the browser suites
 * will not run because Chromium is missing (each suite then reports one todo saying so), and fails the run
 * instead when `CI` is set.
 */
// Extensionless: Jest loads a globalSetup without the suites' moduleNameMapper (which maps `.js` to the `.ts`).
import { browserTestsBlocker } from './chromium';

export default function checkChromium(): void {
  const blocker = browserTestsBlocker(); // throws in CI
  if (blocker !== undefined) process.stdout.write(`\nBrowser tests NOT RUN (one todo per suite): ${blocker}\n`);
}
