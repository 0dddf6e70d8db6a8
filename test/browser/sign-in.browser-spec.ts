/**
 * The sample app's admin sign-in (sample-app/src/admin) in a real browser, on Express and Fastify: the form,
 * a wrong token, the session cookie, sign-out, and the wrong-token limit. The guarded page here is a stand-in
 * for the admin screens, so these tests are about getting in, not about the screens.
 */
import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import type { Browser, Page } from 'playwright-core';
import { AdminAuthModule } from '../../sample-app/src/admin/admin-auth.module.js';
import { AdminGuard } from '../../sample-app/src/admin/admin.guard.js';
import { describeOnEveryAdapter, startWebhookApp, type WebhookTestApp } from '../helpers/webhook-app.js';
import { computedStyle, describeInBrowser, expectAccessible, launchBrowser, openPage, screenshot } from './browser.js';

jest.setTimeout(60_000);

const ADMIN_TOKEN = 'browser-sign-in-admin-token-3e8a';
const WRONG_TOKEN_LIMIT = 3;
const SIGN_IN_CSP = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/** Chromium logs the 401 and 429 answers of the form as "Failed to load resource"; they are what the test asks for. */
const EXPECTED_STATUS_ERRORS = [/Failed to load resource: the server responded with a status of (401|429)/];

@Controller('admin')
@UseGuards(AdminGuard)
class StandInAdminPage {
  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  page(): string {
    return '<!doctype html><html lang="en"><head><title>Admin</title></head><body><main><h1>Admin screens</h1></main></body></html>';
  }
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState();
}

describeInBrowser('admin sign-in in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  describeOnEveryAdapter('admin sign-in', ({ adapterName, makeAdapter }) => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        imports: [AdminAuthModule.forRoot({ adminToken: ADMIN_TOKEN, wrongTokens: { limit: WRONG_TOKEN_LIMIT, windowMs: 60_000 } })],
        controllers: [StandInAdminPage],
      });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('sends a browser without a session to the sign-in form: labelled, script-free, under a strict CSP, accessible', async () => {
      const { page, context, expectNoProblems } = await openPage(browser);
      const answers: Array<{ url: string; status: number; csp?: string }> = [];
      page.on('response', (r) => answers.push({ url: r.url(), status: r.status(), csp: r.headers()['content-security-policy'] }));
      await page.goto(`${t.baseUrl}/admin`);
      expect(page.url()).toBe(`${t.baseUrl}/admin/sign-in`);
      expect(answers[0]).toEqual({ url: `${t.baseUrl}/admin`, status: 303, csp: undefined });
      expect(answers.find((a) => a.url === page.url())).toEqual({ url: page.url(), status: 200, csp: SIGN_IN_CSP });
      await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Webhook Triggers admin');
      expect(await page.getByLabel('Admin token').getAttribute('type')).toBe('password');
      expect(await page.getByRole('button', { name: 'Sign in' }).isVisible()).toBe(true);
      expect(await page.locator('script, [style]').count()).toBe(0);
      // The stylesheet applied (same origin, allowed by style-src 'self').
      expect(await computedStyle(page.getByRole('button', { name: 'Sign in' }), 'backgroundColor')).toBe('rgb(29, 78, 216)');
      await expectAccessible(page, 'the sign-in page');
      await screenshot(page, adapterName, 'sign-in');
      expectNoProblems();
      await context.close();
    });

    it('shows "Wrong admin token." for a wrong token; the right one opens /admin with a session cookie; sign-out ends it', async () => {
      const { page, context, expectNoProblems } = await openPage(browser, { allowConsoleErrors: EXPECTED_STATUS_ERRORS });
      await page.goto(`${t.baseUrl}/admin/sign-in`);
      await signIn(page, 'not-the-admin-token');
      await expect(page.getByRole('alert').textContent()).resolves.toBe('Wrong admin token.');
      expect(page.url()).toBe(`${t.baseUrl}/admin/sign-in`);
      expect(await context.cookies()).toEqual([]);
      await expectAccessible(page, 'the sign-in page after a wrong token');
      await screenshot(page, adapterName, 'sign-in-wrong-token');

      const before = Date.now();
      await signIn(page, ADMIN_TOKEN);
      expect(page.url()).toBe(`${t.baseUrl}/admin`);
      await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Admin screens');
      const [cookie, ...others] = await context.cookies();
      expect(others).toEqual([]);
      expect(cookie).toEqual(
        expect.objectContaining({ name: 'admin_session', path: '/admin', httpOnly: true, sameSite: 'Strict', secure: false }),
      );
      expect(cookie.value).toMatch(/^v1\.\d{13}\.[\w-]{43}$/);
      expect(cookie.expires * 1000).toBeGreaterThanOrEqual(before + 12 * 3600_000 - 2_000);
      expect(cookie.expires * 1000).toBeLessThanOrEqual(Date.now() + 12 * 3600_000 + 2_000);

      // A new page of the same browser stays signed in; the sign-in page offers to sign out.
      await page.goto(`${t.baseUrl}/admin/sign-in`);
      await page.getByRole('link', { name: 'Open the admin' }).click();
      expect(page.url()).toBe(`${t.baseUrl}/admin`);
      await page.goto(`${t.baseUrl}/admin/sign-in`);
      await expectAccessible(page, 'the sign-in page when signed in');
      await screenshot(page, adapterName, 'sign-in-signed-in');
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForLoadState();
      expect(page.url()).toBe(`${t.baseUrl}/admin/sign-in`);
      expect(await context.cookies()).toEqual([]);
      await page.goto(`${t.baseUrl}/admin`);
      expect(page.url()).toBe(`${t.baseUrl}/admin/sign-in`);
      expectNoProblems();
      await context.close();
    });

    it('after too many wrong tokens from one address, the form says how long to wait, even for the right token', async () => {
      const { page, context, expectNoProblems } = await openPage(browser, { allowConsoleErrors: EXPECTED_STATUS_ERRORS });
      await page.goto(`${t.baseUrl}/admin/sign-in`);
      // The previous test spent one of this address's wrong tokens already.
      for (let i = 0; i < WRONG_TOKEN_LIMIT; i++) {
        await signIn(page, `wrong-${i}`);
        if ((await page.getByRole('alert').textContent()) !== 'Wrong admin token.') break;
      }
      await expect(page.getByRole('alert').textContent()).resolves.toMatch(/^Too many wrong admin tokens; try again in \d+ s$/);
      await signIn(page, ADMIN_TOKEN);
      await expect(page.getByRole('alert').textContent()).resolves.toMatch(/^Too many wrong admin tokens; try again in \d+ s$/);
      expect(await context.cookies()).toEqual([]);
      await screenshot(page, adapterName, 'sign-in-too-many-wrong-tokens');
      expectNoProblems();
      await context.close();
    });
  });
});
