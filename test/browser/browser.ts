/**
 * The browser suites' one helper: Debian's Chromium (`apt-get install chromium`) driven by playwright-core,
 * which downloads no browser of its own (`npx playwright install` needs a download we do not rely on), with no way out to the internet, a watch on every page (console errors,
 * CSP violations, uncaught errors, dialogs, requests to anything but 127.0.0.1), screenshots under
 * test-artifacts/screenshots/<adapter>/, and axe-core checks.
 *
 * Without Chromium the suites are skipped with one line saying so (test/browser/global-setup.ts), except in
 * CI (`CI` set), where that is a failure.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Locator, type Page, type ViewportSize } from 'playwright-core';
import { browserTestsBlocker, CHROMIUM_PATH } from './chromium.js';

const ROOT = resolve(__dirname, '../..');

export const SCREENSHOT_DIR = join(ROOT, 'test-artifacts', 'screenshots');

/** Headless Debian Chromium as root in a container (no sandbox, no GPU, no QUIC), and a resolver that fails every host but 127.0.0.1 at once (no internet, no waiting on a CDN). */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
];

/**
 * `describe`, or, when Chromium is missing outside CI, one `it.todo` saying the suite did NOT run and why
 * (the convention of the service-backed suites): nothing is reported as passed, nothing hides as skipped.
 */
export function describeInBrowser(title: string, suite: () => void): void {
  const blocker = browserTestsBlocker();
  if (blocker === undefined) describe(title, suite);
  else it.todo(`${title} NOT RUN: ${blocker}`);
}

/** One browser per suite file; each test opens its own context (`openPage`). */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
}

/** What went wrong on a page, as the watch saw it. */
export interface PageProblems {
  consoleErrors: string[];
  cspViolations: string[];
  pageErrors: string[];
  /** Every alert/confirm/prompt that opened (each is dismissed). */
  dialogs: string[];
  /** Requests to any host but 127.0.0.1. */
  foreignRequests: string[];
}

export interface WatchedPage {
  context: BrowserContext;
  page: Page;
  problems: PageProblems;
  /** Fails the test on any console error, CSP violation, uncaught error, dialog or foreign request so far. */
  expectNoProblems(): void;
}

/**
 * A fresh context (no cookies) and page on `baseUrl`, watched from its first document on. `allowConsoleErrors`
 * lists messages a test expects (e.g. the browser's own "Failed to load resource … 401" after a wrong token).
 */
export async function openPage(
  browser: Browser,
  options: { viewport?: ViewportSize; allowConsoleErrors?: RegExp[] } = {},
): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 800 }, locale: 'en-US' });
  const problems: PageProblems = { consoleErrors: [], cspViolations: [], pageErrors: [], dialogs: [], foreignRequests: [] };
  const allowed = options.allowConsoleErrors ?? [];
  // A binding and an init script come from the driver, so the page's own CSP does not stop them.
  await context.exposeBinding('__reportCspViolation', (_source, text: string) => void problems.cspViolations.push(text));
  // Page code as a string: this project compiles without the DOM library.
  await context.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (e) => window.__reportCspViolation(
      e.effectiveDirective + ' blocked ' + (e.blockedURI || '(inline)') + ' in ' + (e.sourceFile || e.documentURI) + ':' + e.lineNumber));`,
  });
  context.on('request', (request) => {
    const url = new URL(request.url());
    if (!['data:', 'blob:', 'about:'].includes(url.protocol) && url.hostname !== '127.0.0.1') problems.foreignRequests.push(request.url());
  });
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const where = message.location();
    // The browser's own favicon request (not the page's): a 404 there says nothing about the page.
    if (/^http:\/\/127\.0\.0\.1:\d+\/favicon\.ico$/.test(where.url)) return;
    const text = `${message.text()}${where.url ? ` (${where.url}:${where.lineNumber})` : ''}`;
    if (!allowed.some((pattern) => pattern.test(text))) problems.consoleErrors.push(text);
  });
  page.on('pageerror', (error) => problems.pageErrors.push(error.stack ?? error.message));
  page.on('dialog', (dialog) => {
    problems.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return {
    context,
    page,
    problems,
    expectNoProblems: () =>
      expect(problems).toEqual({ consoleErrors: [], cspViolations: [], pageErrors: [], dialogs: [], foreignRequests: [] }),
  };
}

/** A CSS property of the element as the browser computed it (e.g. to see a stylesheet applied). */
export function computedStyle(locator: Locator, property: string): Promise<string> {
  // Typed by hand: this project compiles without the DOM library.
  type Styles = { getComputedStyle(element: unknown): Record<string, string> };
  return locator.evaluate((element, name) => (globalThis as unknown as Styles).getComputedStyle(element)[name], property);
}

/** Saves a full-page screenshot as test-artifacts/screenshots/<adapter>/<name>.png and returns its path. */
export async function screenshot(page: Page, adapter: string, name: string): Promise<string> {
  const path = join(SCREENSHOT_DIR, adapter, `${name.replace(/[^\w.-]+/g, '-')}.png`);
  mkdirSync(dirname(path), { recursive: true });
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** The part of axe-core's results read here. */
interface AxeResults {
  violations: Array<{
    id: string;
    impact?: 'minor' | 'moderate' | 'serious' | 'critical' | null;
    help: string;
    helpUrl: string;
    nodes: Array<{ target: unknown[]; failureSummary?: string }>;
  }>;
}

let axeSource: string | undefined;

/**
 * Runs axe-core on the page as it is now and fails on any `serious` or `critical` violation, listing each
 * rule with the elements it flagged. The source goes in through the driver (not a <script>), so the page's
 * CSP stays on and is not loosened for the test.
 */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate<boolean>("typeof axe !== 'undefined'"))) await page.evaluate(axeSource);
  const results = await page.evaluate<AxeResults>("axe.run(document, { resultTypes: ['violations'] })");
  const bad = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (bad.length === 0) return;
  const lines = bad.flatMap((v) => [
    `${v.id} (${v.impact}): ${v.help} (${v.helpUrl})`,
    ...v.nodes.slice(0, 5).map((n) => `    ${n.target.map(String).join(' ')}: ${(n.failureSummary ?? '').replace(/\s*\n\s*/g, '; ')}`),
    ...(v.nodes.length > 5 ? [`    … and ${v.nodes.length - 5} more`] : []),
  ]);
  throw new Error(
    `axe-core: ${bad.length} serious or critical accessibility violation(s) on ${what} (${page.url()}):\n${lines.join('\n')}`,
  );
}
