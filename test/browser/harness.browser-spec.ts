/**
 * The browser helper itself: what the other browser suites assert "none of" must really be seen. Pages from a
 * bare node:http server, each with one known problem.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { until } from '../helpers/http.js';
import { describeInBrowser, expectAccessible, launchBrowser, openPage, screenshot } from './browser.js';

jest.setTimeout(60_000);

const STRICT_CSP = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const page = (body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Harness</title></head><body><main><h1>Harness</h1>${body}</main></body></html>`;

const PAGES: Record<string, { csp?: string; html: string }> = {
  '/clean': { csp: STRICT_CSP, html: page('<p>Nothing wrong here.</p>') },
  // An inline script and an inline style, both refused by the CSP.
  '/csp': { csp: STRICT_CSP, html: page('<p style="color: red">styled</p><script>document.title = "ran"</script>') },
  // A script from a CDN: the resolver rules make it fail at once.
  '/cdn': { html: page('<script src="https://cdn.example.com/lib.js"></script>') },
  '/alert': { html: page('<script>alert(1)</script>') },
  '/console-error': { html: page('<script>console.error("boom from the page")</script>') },
  '/no-alt': { html: page('<img src="/clean" width="10" height="10"><button></button>') },
};

describeInBrowser('browser test harness', () => {
  let server: Server;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const entry = PAGES[req.url ?? ''];
      if (!entry) return void res.writeHead(404).end();
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', ...(entry.csp && { 'Content-Security-Policy': entry.csp }) });
      res.end(entry.html);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((done) => server?.close(done));
  });

  it('sees nothing wrong on a clean page, passes axe, and saves a screenshot', async () => {
    const { page, context, expectNoProblems } = await openPage(browser);
    await page.goto(`${base}/clean`);
    await expectAccessible(page, 'the clean page');
    const path = await screenshot(page, 'harness', 'clean');
    expect(existsSync(path)).toBe(true);
    expectNoProblems();
    await context.close();
  });

  it('records CSP violations (an inline script and an inline style under a strict policy)', async () => {
    const { page, context, problems } = await openPage(browser);
    await page.goto(`${base}/csp`);
    await until(() => problems.cspViolations.length >= 2, 2_000, 'two CSP violations');
    expect(problems.cspViolations.join('\n')).toMatch(/script-src-elem/);
    expect(problems.cspViolations.join('\n')).toMatch(/style-src-attr/);
    expect(await page.title()).toBe('Harness'); // the inline script did not run
    await context.close();
  });

  it('records a request to anything but 127.0.0.1, which fails at once (no internet)', async () => {
    const { page, context, problems } = await openPage(browser);
    const failed: string[] = [];
    page.on('requestfailed', (r) => failed.push(`${r.url()} ${r.failure()?.errorText}`));
    const t0 = Date.now();
    await page.goto(`${base}/cdn`);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(problems.foreignRequests).toEqual(['https://cdn.example.com/lib.js']);
    expect(failed).toEqual(['https://cdn.example.com/lib.js net::ERR_NAME_NOT_RESOLVED']);
    await context.close();
  });

  it('records dialogs and console errors', async () => {
    const { page, context, problems } = await openPage(browser);
    await page.goto(`${base}/alert`);
    await page.goto(`${base}/console-error`);
    await until(() => problems.consoleErrors.length > 0, 2_000, 'the console error');
    expect(problems.dialogs).toEqual(['alert: 1']);
    // The browser's favicon 404 (these pages have none) is not the page's error and is left out.
    expect(problems.consoleErrors).toEqual([expect.stringContaining('boom from the page')]);
    await context.close();
  });

  it('fails axe on serious or critical violations, naming the rule and the element', async () => {
    const { page, context } = await openPage(browser);
    await page.goto(`${base}/no-alt`);
    const failure = await expectAccessible(page, 'the no-alt page').then(
      () => undefined,
      (e: Error) => e.message,
    );
    expect(failure).toMatch(/image-alt \(critical\)/);
    expect(failure).toMatch(/button-name \(critical\)/);
    expect(failure).toContain('the no-alt page');
    await context.close();
  });
});
