/**
 * The access screens of the admin (docs/security.md) in real Chromium, on Express and Fastify: a trigger's View →
 * Allowed IPs (saved, refused with the bad entry named, applied to the trigger's URL), and the Audit log screen
 * reached from the header (the guard's principal, filters by action and principal, older pages, a trigger's own
 * entries). Driven by visible labels, roles and text; each screen checked with axe-core and saved as a screenshot;
 * no console error (but the refused Save's own 400), CSP violation, dialog or request off 127.0.0.1.
 */
import type { Browser, Page } from 'playwright-core';
import { AuditContext, WebhookTriggerAdminModule } from '../../src/index.js';
import { UserAdminGuard, userAuth } from '../fixtures/admin-guard.js';
import { triggerBot } from '../helpers/http.js';
import { createTrigger, describeOnEveryAdapter, startWebhookApp, UNTHROTTLED, type WebhookTestApp } from '../helpers/webhook-app.js';
import { describeInBrowser, expectAccessible, launchBrowser, openPage, screenshot } from './browser.js';

jest.setTimeout(90_000);

const SHOWN = { timeout: 10_000 };
/** The browser's own console line for the Save the server refuses (the page shows the refusal itself). */
const REFUSED_PUT =
  /^Failed to load resource: the server responded with a status of 400 \(Bad Request\) \(http:\/\/127\.0\.0\.1:\d+\/admin\/api\/triggers\/trg_[\w-]+\/allowed-ips:0\)$/;

describeInBrowser('access screens in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  describeOnEveryAdapter('access screens', ({ adapterName, makeAdapter }) => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: { keySecret: 'browser-access-screens-key-secret-0123', accounts: { acct: { credits: 1_000 } }, rateLimits: UNTHROTTLED },
        imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [UserAdminGuard] })],
      });
    });
    afterAll(() => t?.close());

    /** Runs `use` on a page signed in as `ada` (the host's guard reads her token), then asserts the page saw no problem. */
    async function asAda(use: (page: Page) => Promise<void>): Promise<void> {
      const watched = await openPage(browser, { allowConsoleErrors: [REFUSED_PUT] });
      await watched.context.setExtraHTTPHeaders(userAuth('ada'));
      try {
        await watched.page.goto(`${t.baseUrl}/admin`);
        await watched.page.getByRole('heading', { level: 1, name: 'Bots' }).waitFor(SHOWN);
        await use(watched.page);
        watched.expectNoProblems();
      } finally {
        await watched.context.close();
      }
    }

    /** The stored list, read without viewing the key (a key view is an audit entry of its own). */
    const allowedIpsOf = async (id: string) => (await t.admin.listTriggers('echo')).find((listed) => listed.id === id)?.allowedIps;

    it("saves a trigger's allowed IPs from its View, names a bad entry, and the audit log shows who did it", async () => {
      const trigger = await createTrigger(t, 'echo', 'Guarded trigger');
      // Enough entries of another trigger for a second page of the audit log.
      const busy = await createTrigger(t, 'echo', 'Busy trigger');
      await AuditContext.run('setup-job', async () => {
        for (let i = 0; i < 55; i++) await t.admin.setAllowedIps(busy.id, [`10.0.${i}.0/24`]);
      });

      await asAda(async (page) => {
        await page.getByRole('link', { name: 'Echo', exact: true }).click();
        await page.getByRole('button', { name: 'View Guarded trigger' }).click();
        const view = page.getByRole('region', { name: 'Trigger “Guarded trigger”' });
        await view.waitFor(SHOWN);
        const allowed = view.getByRole('region', { name: 'Allowed IPs' });
        const textarea = allowed.getByLabel('Allowed IPs');
        await expect(textarea.inputValue()).resolves.toBe('');

        await textarea.fill('203.0.113.0/24\n\n  2001:db8::/32  \n');
        await allowed.getByRole('button', { name: 'Save allowed IPs' }).click();
        await allowed.getByRole('status').filter({ hasText: 'Saved: 2 address(es) or range(s) may call this trigger.' }).waitFor(SHOWN);
        await expect(textarea.inputValue()).resolves.toBe('203.0.113.0/24\n2001:db8::/32');
        expect(await allowedIpsOf(trigger.id)).toEqual(['203.0.113.0/24', '2001:db8::/32']);
        expect((await triggerBot(trigger)).status).toBe(403);

        await textarea.fill('203.0.113.0/24\nnot-an-address');
        await allowed.getByRole('button', { name: 'Save allowed IPs' }).click();
        await allowed.getByRole('alert').filter({ hasText: '"not-an-address" is not an IPv4 or IPv6 address or CIDR' }).waitFor(SHOWN);
        expect(await allowedIpsOf(trigger.id)).toEqual(['203.0.113.0/24', '2001:db8::/32']);
        await expectAccessible(page, 'the trigger view with Allowed IPs');
        await screenshot(page, adapterName, 'allowed-ips');

        await textarea.fill('');
        await allowed.getByRole('button', { name: 'Save allowed IPs' }).click();
        await allowed.getByRole('status').filter({ hasText: 'Saved: every address may call this trigger.' }).waitFor(SHOWN);
        expect((await triggerBot(trigger)).status).toBe(200);

        await page.getByRole('navigation', { name: 'Admin' }).getByRole('link', { name: 'Audit log' }).click();
        await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor(SHOWN);
        const table = page.getByRole('table', { name: 'Audit log entries, newest first' });
        const rows = table.getByRole('row').filter({ has: page.getByRole('cell') });
        await rows.first().waitFor(SHOWN);
        const newest = rows.first();
        await expect(newest.locator('td[data-label="Who"]').textContent()).resolves.toBe('user-ada');
        await expect(newest.locator('td[data-label="What"]').textContent()).resolves.toBe('trigger.allowed_ips_set');
        await expect(newest.locator('td[data-label="Details"]').textContent()).resolves.toBe('entries: 0');
        await expect(rows.count()).resolves.toBe(50);
        await page.getByRole('button', { name: 'Show older entries' }).click();
        await page
          .getByRole('status')
          .filter({ hasText: /^Showing \d+ entries\.$/ })
          .waitFor(SHOWN);
        expect(await rows.count()).toBeGreaterThan(50);
        await expectAccessible(page, 'the audit log');
        await screenshot(page, adapterName, 'audit-log');

        await page.getByLabel('Action').selectOption('trigger.key_viewed');
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.getByRole('status').filter({ hasText: 'Showing 1 entry.' }).waitFor(SHOWN);
        await expect(rows.first().locator('td[data-label="Who"]').textContent()).resolves.toBe('user-ada');

        await page.getByLabel('Action').selectOption('');
        await page.getByLabel('Principal').fill('setup-job');
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.getByRole('status').filter({ hasText: 'Showing 50 entries; older ones follow.' }).waitFor(SHOWN);
        await page.getByLabel('Principal').fill('nobody');
        await page.getByRole('button', { name: 'Filter' }).click();
        await page.getByText('No entries match.').waitFor(SHOWN);

        await page.getByLabel('Principal').fill('');
        await page.getByRole('button', { name: 'Filter' }).click();
        await rows.first().getByRole('link', { name: trigger.id }).click();
        await page.getByRole('heading', { level: 1, name: `Audit log of trigger ${trigger.id}` }).waitFor(SHOWN);
        await page.getByRole('status').filter({ hasText: 'Showing 4 entries.' }).waitFor(SHOWN);
        const actions = await table.locator('td[data-label="What"]').allTextContents();
        expect(actions).toEqual(['trigger.allowed_ips_set', 'trigger.allowed_ips_set', 'trigger.key_viewed', 'trigger.created']);
        await screenshot(page, adapterName, 'audit-log-of-trigger');
      });
    });
  });
});
