/**
 * The Signed requests section of a trigger's View (docs/security.md, "Signed requests"; docs/admin.md) in real
 * Chromium, on Express and Fastify, behind the sample app's sign-in: choose the mode, rotate a signing secret
 * (shown once), see the secrets' status, revoke one; the secret copied from the screen signs a request (the
 * standardwebhooks package as the sender) that the trigger accepts without X-Key. Driven by visible labels and
 * roles; every screen checked with axe-core and saved as a screenshot; no console error or CSP violation.
 */
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { WebhookTriggerAdminModule } from '../../src/index.js';
import { AdminAuthModule } from '../../sample-app/src/admin/admin-auth.module.js';
import { AdminGuard } from '../../sample-app/src/admin/admin.guard.js';
import { triggerBot, type HttpResult } from '../helpers/http.js';
import {
  createTrigger,
  describeOnEveryAdapter,
  startWebhookApp,
  type TestTrigger,
  UNTHROTTLED,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';
import { describeInBrowser, expectAccessible, launchBrowser, openPage, screenshot } from './browser.js';

jest.setTimeout(90_000);

const ADMIN_TOKEN = 'browser-signing-screens-token-51c9';
const SHOWN = { timeout: 10_000 };

/** POSTs a request signed with `secret` (the standardwebhooks package as the sender), without X-Key. */
function sendSigned(trigger: TestTrigger, secret: string): Promise<HttpResult> {
  const body = JSON.stringify({ from: 'browser test' });
  const msgId = `msg_${randomBytes(8).toString('hex')}`;
  const now = new Date();
  const headers = {
    'webhook-id': msgId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(msgId, now, body),
  };
  return triggerBot(trigger, undefined, { raw: body, headers, key: null });
}

describeInBrowser('signed requests screens in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  describeOnEveryAdapter('signed requests screens', ({ adapterName, makeAdapter }) => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      const auth = AdminAuthModule.forRoot({ adminToken: ADMIN_TOKEN });
      t = await startWebhookApp(makeAdapter, {
        options: { accounts: { acct: { credits: 1_000 } }, rateLimits: UNTHROTTLED, shutdownGraceMs: 200 },
        imports: [auth, WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [AdminGuard], imports: [auth] })],
      });
    });
    afterAll(() => t?.close());

    async function checkScreen(page: Page, name: string): Promise<void> {
      await expectAccessible(page, `the ${name} screen`);
      await screenshot(page, adapterName, name);
    }

    it('sets the mode, rotates a secret shown once, revokes it; the copied secret signs a request accepted without X-Key', async () => {
      const trigger = await createTrigger(t, 'echo', 'Signed trigger');
      const watched = await openPage(browser, {});
      const { page } = watched;
      try {
        await page.goto(`${t.baseUrl}/admin`);
        await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('link', { name: 'Echo', exact: true }).click();
        await page.getByRole('button', { name: 'View Signed trigger' }).click();
        const view = page.getByRole('region', { name: 'Trigger “Signed trigger”' });
        const signing = view.getByRole('region', { name: 'Signed requests' });
        await signing.getByText('No signing secret yet.').waitFor(SHOWN);
        expect(await signing.getByLabel('Off: X-Key only (the default).').isChecked()).toBe(true);
        await signing.getByText('x-key: <TRIGGER_KEY>', { exact: false }).waitFor(SHOWN);
        await checkScreen(page, 'signing-off');

        // Instead of key, with no secret yet: the screen warns that every request is refused.
        await signing.getByLabel('Instead of key: A valid signature is enough; X-Key is not asked.').check();
        await signing.getByRole('button', { name: 'Save mode' }).click();
        await signing.getByRole('status').filter({ hasText: 'Saved: signed requests instead of key.' }).waitFor(SHOWN);
        await signing.getByRole('alert').filter({ hasText: 'No usable signing secret' }).waitFor(SHOWN);
        expect(await signing.getByText('x-key: <TRIGGER_KEY>', { exact: false }).count()).toBe(0);
        expect((await t.admin.getRequestSigning(trigger.id))?.mode).toBe('instead-of-key');

        // Rotate signing secret: confirmed, the new secret is shown once, and it signs.
        await signing.getByRole('button', { name: 'Rotate signing secret' }).click();
        const dialog = page.getByRole('dialog', { name: /^Rotate the signing secret of “Signed trigger”\?/ });
        await dialog.getByRole('button', { name: 'Rotate signing secret' }).click();
        await signing.getByRole('status').filter({ hasText: 'Rotated the signing secret: give the new one to the sender.' }).waitFor(SHOWN);
        const secret = await signing.getByLabel('New signing secret').inputValue();
        expect(secret).toMatch(/^whsec_/);
        const table = signing.getByRole('table', { name: 'Signing secrets of “Signed trigger”, newest first' });
        expect(await table.getByRole('row').count()).toBe(2); // the header and one secret
        await table.getByText('active', { exact: true }).waitFor(SHOWN);
        await checkScreen(page, 'signing-rotated');
        expect((await sendSigned(trigger, secret)).status).toBe(200);
        expect((await triggerBot(trigger, {})).status).toBe(401); // X-Key alone no longer does

        // Revoke: confirmed, the secret is revoked at once and no longer signs; the one-time secret is gone.
        await table.getByRole('button', { name: /^Revoke the secret created / }).click();
        await page
          .getByRole('dialog', { name: /^Revoke this signing secret\?/ })
          .getByRole('button', { name: 'Revoke secret' })
          .click();
        await signing.getByRole('status').filter({ hasText: 'Revoked the signing secret.' }).waitFor(SHOWN);
        await table.getByText('revoked', { exact: true }).waitFor(SHOWN);
        expect(await signing.getByLabel('New signing secret').count()).toBe(0);
        expect((await sendSigned(trigger, secret)).status).toBe(401);
        await checkScreen(page, 'signing-revoked');

        // On a phone (360 px wide) the section fits: the table turns into cards, the example headers wrap.
        await page.setViewportSize({ width: 360, height: 740 });
        await signing.getByText('Headers a sender sends').scrollIntoViewIfNeeded();
        const { scrollWidth, clientWidth } = await page.evaluate<{ scrollWidth: number; clientWidth: number }>(
          '({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth })',
        );
        expect(scrollWidth).toBe(clientWidth);
        await checkScreen(page, '360-signing');
        watched.expectNoProblems();
      } finally {
        await watched.context.close();
      }
    });
  });
});
