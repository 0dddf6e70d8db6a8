/**
 * The admin's Overview screen (docs/admin.md "Overview") in real Chromium, on Express and Fastify, behind the sample
 * app's sign-in: runs of several statuses and a callback whose receiver answered 410 Gone, seen as figures, as
 * charts drawn in the page (inline SVG named for screen readers, each with its table), for the last hour and the
 * last day. Driven by visible labels and roles; checked with axe-core and saved as screenshots; no console error,
 * CSP violation, page dialog or request off 127.0.0.1.
 */
import type { Browser, Page } from 'playwright-core';
import { WebhookTriggerAdminModule } from '../../src/index.js';
import { AdminAuthModule } from '../../sample-app/src/admin/admin-auth.module.js';
import { AdminGuard } from '../../sample-app/src/admin/admin.guard.js';
import { startCallbackReceiver, type CallbackReceiver } from '../helpers/callback-receiver.js';
import { startRun, syncUntilFinished, until } from '../helpers/http.js';
import { createTrigger, describeOnEveryAdapter, startWebhookApp, UNTHROTTLED, type WebhookTestApp } from '../helpers/webhook-app.js';
import { describeInBrowser, expectAccessible, launchBrowser, openPage, screenshot } from './browser.js';

jest.setTimeout(90_000);

const ADMIN_TOKEN = 'browser-overview-screen-token-3e8a';
/** How long a screen may take to show what a test waits for. */
const SHOWN = { timeout: 10_000 };

describeInBrowser('Overview screen in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  describeOnEveryAdapter('Overview', ({ adapterName, makeAdapter }) => {
    let t: WebhookTestApp;
    let receiver: CallbackReceiver;
    let running: string;

    beforeAll(async () => {
      receiver = await startCallbackReceiver();
      receiver.respond((res) => res.writeHead(410).end());
      const auth = AdminAuthModule.forRoot({ adminToken: ADMIN_TOKEN });
      t = await startWebhookApp(makeAdapter, {
        options: {
          accounts: { acct: { credits: 1_000 } },
          rateLimits: UNTHROTTLED,
          shutdownGraceMs: 200,
          callbackAllowedHosts: ['127.0.0.1'],
        },
        imports: [auth, WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [AdminGuard], imports: [auth] })],
      });
      // Three succeeded runs, one failed, one cancelled while running, one running; the failed run's callback is
      // answered 410 Gone: its delivery fails for good and the callback is disabled.
      const echo = await createTrigger(t, 'echo');
      const fail = await createTrigger(t, 'fail');
      const slow = await createTrigger(t, 'slow');
      await t.admin.setCallback(fail.id, { url: `${receiver.origin}/hook` });
      for (const trigger of [echo, echo, echo, fail]) await syncUntilFinished(trigger, await startRun(trigger));
      const cancelled = await startRun(slow, { ms: 60_000 });
      running = await startRun(slow, { ms: 60_000 });
      await until(async () => (await t.admin.getOverview('hour')).backlog.running === 2, 5_000, 'two runs running');
      await t.admin.cancelInvocation(cancelled, { showInputs: false });
      await until(
        async () => {
          const { callbacks } = await t.admin.getOverview('hour');
          return callbacks.failedDeliveries === 1 && callbacks.disabledCallbacks === 1;
        },
        10_000,
        'the delivery to fail and the callback to be disabled',
      );
    });
    afterAll(async () => {
      if (running) await t?.admin.cancelInvocation(running, { showInputs: false });
      await t?.close();
      await receiver?.close();
    });

    /** The figure shown for `term` in the Overview's figures. */
    const figure = (page: Page, term: string) =>
      page
        .locator('.overview-figures div')
        .filter({ has: page.getByText(term, { exact: true }) })
        .locator('dd');

    it('shows the counts and charts of the last hour and the last day, readable and accessible', async () => {
      const watched = await openPage(browser);
      const { page } = watched;
      await page.goto(`${t.baseUrl}/admin`);
      await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Overview' }).click();
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor(SHOWN);

      expect(await page.getByRole('link', { name: 'Last hour' }).getAttribute('aria-current')).toBe('page');
      expect(await figure(page, 'Runs finished').textContent()).toBe('5');
      expect(await figure(page, 'Succeeded').textContent()).toBe('3');
      expect(await figure(page, 'Failed').textContent()).toBe('1');
      expect(await figure(page, 'Cancelled').textContent()).toBe('1');
      expect(await figure(page, 'Running now').textContent()).toBe('1');
      expect(await figure(page, 'Deliveries failed').textContent()).toBe('1');
      expect(await figure(page, 'Callbacks disabled').textContent()).toBe('1');
      expect(await figure(page, 'Duration p50 / p95').textContent()).toMatch(/^\d+ ms \/ \d+(\.\d+)? m?s$/);

      // Each chart is an image named by its title, its numbers in words in its description.
      const runsChart = page.getByRole('img', { name: /^Runs finished per minute, by status/ });
      await runsChart.waitFor(SHOWN);
      expect(await runsChart.getAttribute('aria-labelledby')).toMatch(/ /);
      expect(await runsChart.locator('desc').textContent()).toMatch(/5 runs finished \(3 succeeded, 1 failed, 1 cancelled, 0 timed out\)/);
      expect(await runsChart.locator('rect.chart-succeeded').count()).toBeGreaterThan(0);
      expect(await runsChart.locator('rect.chart-failed').count()).toBeGreaterThan(0);
      await page.getByRole('img', { name: /^Run duration per minute, p50 and p95/ }).waitFor(SHOWN);
      await page.getByRole('img', { name: /^Queue wait per minute, p50 and p95/ }).waitFor(SHOWN);
      expect(await page.locator('svg.chart circle.chart-p95').count()).toBeGreaterThan(0);

      // The numbers as a table, beside the chart.
      await page.getByText('Runs finished per minute as a table').click();
      const table = page.getByRole('table', { name: 'Runs finished per minute, by status' });
      await table.waitFor(SHOWN);
      expect(await table.getByRole('row').count()).toBe(61);
      const busiest = table.getByRole('row').filter({ has: page.getByRole('cell', { name: '3', exact: true }) });
      expect(await busiest.count()).toBeGreaterThanOrEqual(1);

      await expectAccessible(page, 'the Overview of the last hour');
      await screenshot(page, adapterName, 'overview-hour');

      await page.getByRole('link', { name: 'Last day' }).click();
      await page.getByRole('img', { name: /^Runs finished per 30 minutes, by status/ }).waitFor(SHOWN);
      expect(await page.getByRole('link', { name: 'Last day' }).getAttribute('aria-current')).toBe('page');
      expect(await figure(page, 'Runs finished').textContent()).toBe('5');
      await expectAccessible(page, 'the Overview of the last day');
      await screenshot(page, adapterName, 'overview-day');
      watched.expectNoProblems();
      await watched.context.close();
    });
  });
});
