/**
 * A trigger's Keys in the admin (docs/security.md, "Keys and rotation") in real Chromium, on Express and Fastify,
 * behind the sample app's sign-in: the View's Keys table (label, created, last used, expires), Add key (shown
 * once), Revoke (confirmed; the key answers 401 over HTTP at once), and Rotate key (the old key listed with its
 * grace end, and working until then). Driven by visible labels and roles; every screen checked with axe-core and
 * saved as a screenshot; no console error, CSP violation or request off 127.0.0.1.
 */
import type { Browser, Locator, Page } from 'playwright-core';
import { WebhookTriggerAdminModule } from '../../src/index.js';
import { AdminAuthModule } from '../../sample-app/src/admin/admin-auth.module.js';
import { AdminGuard } from '../../sample-app/src/admin/admin.guard.js';
import { triggerBot } from '../helpers/http.js';
import { createTrigger, describeOnEveryAdapter, startWebhookApp, UNTHROTTLED, type WebhookTestApp } from '../helpers/webhook-app.js';
import { describeInBrowser, expectAccessible, launchBrowser, openPage, screenshot } from './browser.js';

jest.setTimeout(90_000);

const ADMIN_TOKEN = 'browser-trigger-keys-token-51c9';
const SHOWN = { timeout: 10_000 };

describeInBrowser('trigger keys in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  describeOnEveryAdapter('trigger keys screens', ({ adapterName, makeAdapter }) => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      const auth = AdminAuthModule.forRoot({ adminToken: ADMIN_TOKEN });
      t = await startWebhookApp(makeAdapter, {
        options: { accounts: { acct: { credits: 1_000 } }, rateLimits: UNTHROTTLED, keyRotationGraceMs: 60 * 60_000 },
        imports: [auth, WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [AdminGuard], imports: [auth] })],
      });
    });
    afterAll(() => t?.close());

    async function checkScreen(page: Page, name: string): Promise<void> {
      await expectAccessible(page, `the ${name} screen`);
      await screenshot(page, adapterName, name);
    }

    /** Signs in, opens Echo → Settings and views the trigger; runs `use` with the page and the view's Keys region. */
    async function onKeys(name: string, use: (page: Page, keys: Locator, view: Locator) => Promise<void>): Promise<void> {
      const watched = await openPage(browser);
      try {
        const { page } = watched;
        await page.goto(`${t.baseUrl}/admin`);
        await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('link', { name: 'Echo', exact: true }).click();
        await page.getByRole('heading', { level: 2, name: 'Bot Triggers' }).waitFor(SHOWN);
        await page.getByRole('button', { name: `View ${name}` }).click();
        const view = page.getByRole('region', { name: `Trigger “${name}”` });
        const keys = view.getByRole('region', { name: 'Keys' });
        await keys.getByRole('table').waitFor(SHOWN);
        await use(page, keys, view);
        watched.expectNoProblems();
      } finally {
        await watched.context.close();
      }
    }

    const rowOf = (keys: Locator, label: string) =>
      keys.getByRole('row').filter({ has: keys.page().getByRole('cell', { name: label, exact: true }) });
    const cellOf = (row: Locator, column: string) => row.locator(`td[data-label="${column}"]`);

    it('lists the keys, adds one (shown once, it works over HTTP), and revokes one after a confirm (401 at once)', async () => {
      const trigger = await createTrigger(t, 'echo', 'Keyed trigger');
      expect((await triggerBot(trigger, { first: 'use' })).status).toBe(200);
      await onKeys('Keyed trigger', async (page, keys) => {
        const first = rowOf(keys, 'Key 1');
        expect(await cellOf(first, 'Expires').innerText()).toBe('Never');
        await checkScreen(page, 'keys');

        await keys.getByLabel('New key label').fill('CI deploys');
        await keys.getByRole('button', { name: 'Add key' }).click();
        await keys.getByText('Added the key “CI deploys”. Copy it now: this list never shows it.').waitFor(SHOWN);
        const added = await keys.getByLabel('Key “CI deploys”').inputValue();
        expect(added).toMatch(/^whk_/);
        await rowOf(keys, 'CI deploys').waitFor(SHOWN);
        expect(await cellOf(rowOf(keys, 'CI deploys'), 'Last used').innerText()).toBe('Never');
        await checkScreen(page, 'key-added');
        expect((await triggerBot({ url: trigger.url, key: added }, { second: 'key' })).status).toBe(200);

        await keys.getByRole('button', { name: 'Revoke key “Key 1”' }).click();
        const dialog = page.getByRole('dialog', { name: /^Revoke the key “Key 1”\?/ });
        await dialog.waitFor(SHOWN);
        await checkScreen(page, 'revoke-key-dialog');
        await dialog.getByRole('button', { name: 'Revoke', exact: true }).click();
        await keys.getByRole('status').filter({ hasText: 'Revoked the key “Key 1”.' }).waitFor(SHOWN);
        await rowOf(keys, 'Key 1').waitFor({ state: 'detached', ...SHOWN });
        expect((await triggerBot(trigger, { revoked: 'key' })).status).toBe(401);
        expect((await triggerBot({ url: trigger.url, key: added }, { other: 'key' })).status).toBe(200);
        await checkScreen(page, 'key-revoked');
      });
    });

    it('rotates: the new key is shown with until when the old one works, and the old key is listed with its grace end', async () => {
      const trigger = await createTrigger(t, 'echo', 'Rotated keys');
      await onKeys('Rotated keys', async (page) => {
        await page.getByRole('button', { name: 'Rotate key Rotated keys' }).click();
        const dialog = page.getByRole('dialog', { name: /^Rotate the key of “Rotated keys”\?/ });
        await dialog.getByRole('button', { name: 'Rotate key' }).click();
        const view = page.getByRole('region', { name: 'Trigger “Rotated keys”' });
        await view.getByText(/^New key\. The old key works until .+, then stops; copy this one now\.$/).waitFor(SHOWN);
        const keys = view.getByRole('region', { name: 'Keys' });
        const old = rowOf(keys, 'Key 1');
        await old.waitFor(SHOWN);
        expect(await cellOf(old, 'Expires').innerText()).toMatch(/^Grace ends /);
        expect(await cellOf(rowOf(keys, 'Key 2'), 'Expires').innerText()).toBe('Never');
        await checkScreen(page, 'key-rotated');
        const newKey = await view.getByLabel('Key', { exact: true }).inputValue();
        expect((await triggerBot(trigger, { old: 'key' })).status).toBe(200);
        expect((await triggerBot({ url: trigger.url, key: newKey }, { new: 'key' })).status).toBe(200);
      });
    });
  });
});
