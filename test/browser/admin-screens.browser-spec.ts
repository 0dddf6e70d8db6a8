/**
 * The admin screens (admin-ui/, mounted by WebhookTriggerAdminModule) in real Chromium, on Express and
 * Fastify, behind the sample app's own sign-in (AdminAuthModule + AdminGuard). Driven as a person would, by
 * visible labels, roles and text only; the bots are triggered over plain HTTP with the URL and key the screens
 * show. Every screen is checked with axe-core and saved as a screenshot; no test may see a console error, a
 * CSP violation, a dialog opened by the page or a request to anything but 127.0.0.1.
 */
import type { Browser, Locator, Page, ViewportSize } from 'playwright-core';
import { WebhookTriggerAdminModule, type WebhookTriggerModuleOptions } from '../../src/index.js';
import { AdminAuthModule } from '../../sample-app/src/admin/admin-auth.module.js';
import { AdminGuard } from '../../sample-app/src/admin/admin.guard.js';
import { getStatus, send, startRun, syncUntilFinished, triggerBot } from '../helpers/http.js';
import { ADMIN_TEST_TOKEN, BasicChallengeAdminGuard } from '../fixtures/admin-guard.js';
import { storeLargeRuns } from '../helpers/db.js';
import { freePort } from '../helpers/sample-app-process.js';
import {
  createTrigger,
  describeOnEveryAdapter,
  startWebhookApp,
  type AdapterFactory,
  type TestTrigger,
  UNTHROTTLED,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';
import { describeInBrowser, expectAccessible, launchBrowser, openPage, screenshot, type WatchedPage } from './browser.js';

jest.setTimeout(90_000);

const ADMIN_TOKEN = 'browser-admin-screens-token-51c9';
const XSS_NAME = '<img src=x onerror=alert(1)>';
const PHONE: ViewportSize = { width: 360, height: 740 };
/** What run detail says when the admin does not show inputs. */
const INPUTS_HIDDEN = 'The inputs of runs are not shown in these screens (a setting of this admin). A replay still sends them.';

/** How long a screen may take to show what a test waits for. */
const SHOWN = { timeout: 10_000 };

/** An app with the webhook module, the admin at /admin behind the sample's sign-in, and a public base URL on its real port. */
async function startAdminApp(makeAdapter: AdapterFactory, admin: { readOnly?: boolean; showInputs?: boolean }): Promise<WebhookTestApp> {
  const port = await freePort();
  const auth = AdminAuthModule.forRoot({ adminToken: ADMIN_TOKEN });
  const options: WebhookTriggerModuleOptions = {
    keySecret: 'browser-admin-screens-key-secret-0123',
    publicBaseUrl: `http://127.0.0.1:${port}`,
    accounts: { acct: { credits: 1_000 } },
    rateLimits: UNTHROTTLED,
    shutdownGraceMs: 200,
  };
  return startWebhookApp(makeAdapter, {
    port,
    options,
    imports: [
      auth,
      WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [AdminGuard], imports: [auth], signOutPath: '/admin/sign-out', ...admin }),
    ],
  });
}

/** The trigger as the screens show it: its URL and key are the ones to call. */
const asCalled = (url: string, key: string): Pick<TestTrigger, 'url' | 'key'> => ({ url, key });

describeInBrowser('admin screens in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** Opens a fresh context at /admin and signs in through the form, as a person would; lands on Bots. */
  async function signedIn(t: WebhookTestApp, viewport?: ViewportSize): Promise<WatchedPage> {
    const watched = await openPage(browser, { viewport });
    await watched.page.goto(`${t.baseUrl}/admin`);
    await watched.page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await watched.page.getByRole('button', { name: 'Sign in' }).click();
    await watched.page.getByRole('heading', { level: 1, name: 'Bots' }).waitFor(SHOWN);
    return watched;
  }

  /** Runs `use` on a signed-in page, then asserts the page saw no problem; the context is closed either way. */
  async function asAdmin(t: WebhookTestApp, use: (page: Page) => Promise<void>, viewport?: ViewportSize): Promise<void> {
    const watched = await signedIn(t, viewport);
    try {
      await use(watched.page);
      watched.expectNoProblems();
    } finally {
      await watched.context.close();
    }
  }

  /** Bots → the bot → a tab, by clicking. */
  async function openBot(page: Page, botName: string, tab: 'Settings' | 'History'): Promise<void> {
    await page.getByRole('link', { name: botName, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: botName }).waitFor(SHOWN);
    await page.getByRole('tab', { name: tab }).click();
    await page.getByRole('heading', { level: 2, name: tab === 'Settings' ? 'Bot Triggers' : 'History' }).waitFor(SHOWN);
    if (tab === 'History') await page.getByText('Live', { exact: true }).waitFor(SHOWN); // the live stream is open
  }

  /** The row of the History table that links to this run. */
  const runRow = (page: Page, runId: string): Locator =>
    page.getByRole('row').filter({ has: page.getByRole('link', { name: runId, exact: true }) });

  /** The open trigger view (its heading names the trigger). */
  const triggerView = (page: Page, name: string): Locator => page.getByRole('region', { name: `Trigger “${name}”` });

  /** axe-core and a screenshot: what every screen gets. */
  async function checkScreen(page: Page, adapterName: string, name: string): Promise<void> {
    await expectAccessible(page, `the ${name} screen`);
    await screenshot(page, adapterName, name);
  }

  describeOnEveryAdapter('admin screens', ({ adapterName, makeAdapter }) => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startAdminApp(makeAdapter, { showInputs: true });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('signs in through the form: a wrong token shows "Wrong admin token.", the right one opens Bots', async () => {
      const { page, context, expectNoProblems } = await openPage(browser, {
        allowConsoleErrors: [/Failed to load resource: the server responded with a status of 401/],
      });
      try {
        await page.goto(`${t.baseUrl}/admin`);
        expect(page.url()).toBe(`${t.baseUrl}/admin/sign-in`);
        await checkScreen(page, adapterName, 'sign-in');
        await page.getByLabel('Admin token').fill('not-the-admin-token');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('alert').filter({ hasText: 'Wrong admin token.' }).waitFor(SHOWN);
        await checkScreen(page, adapterName, 'sign-in-wrong-token');

        await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { level: 1, name: 'Bots' }).waitFor(SHOWN);
        expect(page.url()).toBe(`${t.baseUrl}/admin`);
        const echo = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'Echo', exact: true }) });
        expect(await echo.getByRole('cell').allTextContents()).toEqual(['Echo', 'acct', '1,000', '0', '0']);
        await checkScreen(page, adapterName, 'bots');

        // Sign out (the admin's signOutPath, the sample's route): back to the sign-in form, and the screens ask again.
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.getByLabel('Admin token').waitFor(SHOWN);
        expect(page.url()).toBe(`${t.baseUrl}/admin/sign-in`);
        await page.goto(`${t.baseUrl}/admin`);
        expect(page.url()).toBe(`${t.baseUrl}/admin/sign-in`);
        expectNoProblems();
      } finally {
        await context.close();
      }
    });

    it('creates a trigger (Settings → Bot Triggers → Add Trigger); View shows a URL and key that start the bot over HTTP', async () => {
      await asAdmin(t, async (page) => {
        await openBot(page, 'Echo', 'Settings');
        await checkScreen(page, adapterName, 'bot-settings');
        await page.getByRole('button', { name: 'Add Trigger' }).click();
        await page.getByLabel('Name', { exact: true }).fill('Made in the browser');
        await page.getByLabel('Type', { exact: true }).selectOption('webhook');
        await checkScreen(page, adapterName, 'add-trigger');
        await page.getByRole('button', { name: 'Create', exact: true }).click();

        const created = triggerView(page, 'Made in the browser');
        await created.waitFor(SHOWN);
        await page.getByRole('status').filter({ hasText: 'Created the trigger “Made in the browser”.' }).waitFor(SHOWN);
        const url = await created.getByLabel('URL', { exact: true }).inputValue();
        const key = await created.getByLabel('Key', { exact: true }).inputValue();
        expect(url).toMatch(new RegExp(`^${t.baseUrl}/webhooks/trg_[^/]+/trigger$`));
        expect(key).toMatch(/^whk_/);
        await checkScreen(page, adapterName, 'trigger-created');

        // Closed and viewed again from the list: the same URL and key.
        await created.getByRole('button', { name: 'Close' }).click();
        await page.getByRole('button', { name: 'View Made in the browser' }).click();
        const viewed = triggerView(page, 'Made in the browser');
        await viewed.waitFor(SHOWN);
        expect(await viewed.getByLabel('URL', { exact: true }).inputValue()).toBe(url);
        expect(await viewed.getByLabel('Key', { exact: true }).inputValue()).toBe(key);
        expect(await viewed.getByLabel('Trigger with curl').inputValue()).toContain(`X-Key: ${key}`);
        await checkScreen(page, adapterName, 'trigger-view');

        const started = await triggerBot(asCalled(url, key), { greeting: 'from the view' });
        expect(started.status).toBe(200);
        const done = await syncUntilFinished(asCalled(url, key), started.body.invocation.id);
        expect(done.body).toEqual({ success: true, outputs: [{ title: 'greeting', message: 'from the view' }] });
      });
    });

    it('History shows a new run by itself with its outputs; its detail; Replay with edited inputs runs them', async () => {
      const trigger = await createTrigger(t, 'echo', 'History trigger');
      await asAdmin(t, async (page) => {
        await openBot(page, 'Echo', 'History');
        let documentLoads = 0;
        page.on('load', () => documentLoads++);
        const runId = await startRun(trigger, { greeting: 'hello' });
        // No reload: the live stream brings the run in, then its outputs.
        const row = runRow(page, runId);
        await row.getByText('greeting: hello').waitFor(SHOWN);
        await row.getByText('succeeded', { exact: true }).waitFor(SHOWN);
        expect(documentLoads).toBe(0);
        expect(await row.getByText('History trigger').count()).toBe(1);
        await checkScreen(page, adapterName, 'history');

        await row.getByRole('link', { name: runId }).click();
        await page.getByRole('heading', { level: 1, name: `Run ${runId}` }).waitFor(SHOWN);
        const outputs = page.getByRole('region', { name: 'Outputs' });
        expect(await outputs.getByRole('term').allTextContents()).toEqual(['greeting']);
        expect(await outputs.getByRole('definition').allTextContents()).toEqual(['hello']);
        expect(JSON.parse(await page.getByLabel('Inputs as JSON').innerText())).toEqual({ greeting: 'hello' });
        await checkScreen(page, adapterName, 'run-detail');

        const inputs = page.getByLabel('Inputs (JSON)');
        expect(JSON.parse(await inputs.inputValue())).toEqual({ greeting: 'hello' });
        await inputs.fill('{ "greeting": "edited in the browser" }');
        await page.getByRole('button', { name: 'Replay', exact: true }).click();
        const replayHeading = page.getByRole('heading', { level: 1, name: /^Run / }).filter({ hasNotText: runId });
        await replayHeading.waitFor(SHOWN);
        const replayId = (await replayHeading.innerText()).replace(/^Run /, '');
        await page
          .getByRole('region', { name: 'Outputs' })
          .getByRole('definition')
          .filter({ hasText: 'edited in the browser' })
          .waitFor(SHOWN);
        expect(await page.getByRole('region', { name: 'Outputs' }).getByRole('term').allTextContents()).toEqual(['greeting']);
        await checkScreen(page, adapterName, 'run-replayed');

        // The replay is a run of its own, through the same trigger, in History too.
        await page.getByRole('link', { name: 'Back to the History of Echo' }).click();
        await runRow(page, replayId).getByText('greeting: edited in the browser').waitFor(SHOWN);
        expect(await runRow(page, replayId).getByText('History trigger').count()).toBe(1);
      });
    });

    it('History shows an error too long to list as cut, with a link to the run, whose detail shows it whole', async () => {
      const trigger = await createTrigger(t, 'echo', 'Cut error trigger');
      // A run stored with a 20 KB error, as an older version (before messages were bounded) could store it.
      await storeLargeRuns(t.store, {
        triggerId: trigger.id,
        botId: 'echo',
        accountId: 'acct',
        count: 1,
        inputsChars: 10,
        errorChars: 20_000,
        from: Date.now(),
      });
      const runId = 'inv_' + '1'.padStart(22, '0');
      const message = (await t.admin.getInvocation(runId))!.error!.message;
      await asAdmin(t, async (page) => {
        await openBot(page, 'Echo', 'History');
        const cut = runRow(page, runId).getByRole('link', { name: 'error too long to list — open the run' });
        await cut.waitFor(SHOWN);
        expect(await runRow(page, runId).getByText(message.slice(0, 40)).count()).toBe(0);
        await checkScreen(page, adapterName, 'history-cut-error');
        await cut.click();
        await page.getByRole('heading', { level: 1, name: `Run ${runId}` }).waitFor(SHOWN);
        const error = page.getByRole('region', { name: 'Error' });
        expect(await error.getByRole('definition').first().innerText()).toBe(message);
      });
    });

    it('cancels a running slow run from its detail: its status becomes cancelled', async () => {
      const slow = await createTrigger(t, 'slow', 'Slow trigger');
      await asAdmin(t, async (page) => {
        await openBot(page, 'slow', 'History');
        const runId = await startRun(slow, { ms: 60_000 });
        const row = runRow(page, runId);
        await row.getByText('running', { exact: true }).waitFor(SHOWN);
        await row.getByRole('link', { name: runId }).click();
        await page.getByRole('heading', { level: 1, name: `Run ${runId}` }).waitFor(SHOWN);

        await page.getByRole('button', { name: 'Cancel run' }).click();
        const dialog = page.getByRole('dialog', { name: 'Cancel this run?' });
        await dialog.waitFor(SHOWN);
        await checkScreen(page, adapterName, 'cancel-dialog');
        await dialog.getByRole('button', { name: 'Cancel run' }).click();
        await page.getByRole('status').filter({ hasText: 'Cancel requested.' }).waitFor(SHOWN);
        const status = page.getByRole('term').filter({ hasText: 'Status' }).locator('xpath=following-sibling::dd[1]');
        await status.getByText('cancelled', { exact: true }).waitFor(SHOWN);
        expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
        await checkScreen(page, adapterName, 'run-cancelled');

        const seen = await getStatus(slow, runId);
        expect(seen.body.invocation.status).toBe('cancelled');
      });
    });

    it('rotates a key: the view shows the new key and until when the old one works; both answer 200 over HTTP meanwhile', async () => {
      const trigger = await createTrigger(t, 'echo', 'Rotating trigger');
      await asAdmin(t, async (page) => {
        await openBot(page, 'Echo', 'Settings');
        await page.getByRole('button', { name: 'Rotate key Rotating trigger' }).click();
        const dialog = page.getByRole('dialog', { name: /^Rotate the key of “Rotating trigger”\?/ });
        await dialog.waitFor(SHOWN);
        await checkScreen(page, adapterName, 'rotate-dialog');
        await dialog.getByRole('button', { name: 'Rotate key' }).click();

        const view = triggerView(page, 'Rotating trigger');
        await view.waitFor(SHOWN);
        await view.getByText(/^New key\. The old key works until .+, then stops; copy this one now\.$/).waitFor(SHOWN);
        const newKey = await view.getByLabel('Key', { exact: true }).inputValue();
        expect(newKey).toMatch(/^whk_/);
        expect(newKey).not.toBe(trigger.key);
        expect(await view.getByLabel('URL', { exact: true }).inputValue()).toBe(trigger.url);
        await checkScreen(page, adapterName, 'trigger-rotated');

        expect((await triggerBot(trigger, { old: 'key' })).status).toBe(200); // its grace end: trigger-keys.browser-spec.ts
        expect((await triggerBot({ url: trigger.url, key: newKey }, { new: 'key' })).status).toBe(200);
      });
    });

    it('deletes a trigger: it leaves the list and its URL answers 404', async () => {
      const trigger = await createTrigger(t, 'echo', 'Doomed trigger');
      await asAdmin(t, async (page) => {
        await openBot(page, 'Echo', 'Settings');
        await page.getByRole('button', { name: 'Delete Doomed trigger' }).click();
        const dialog = page.getByRole('dialog', { name: /^Delete “Doomed trigger”\?/ });
        await dialog.waitFor(SHOWN);
        await checkScreen(page, adapterName, 'delete-dialog');
        await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
        await page.getByRole('status').filter({ hasText: 'Deleted the trigger “Doomed trigger”.' }).waitFor(SHOWN);
        expect(await page.getByRole('button', { name: 'Delete Doomed trigger' }).count()).toBe(0);
        await checkScreen(page, adapterName, 'trigger-deleted');

        expect((await triggerBot(trigger, {})).status).toBe(404);
      });
    });

    it(`shows a trigger named ${XSS_NAME} as those characters, everywhere, and runs none of it`, async () => {
      const requested: string[] = [];
      await asAdmin(t, async (page) => {
        page.on('request', (r) => requested.push(new URL(r.url()).pathname));
        await openBot(page, 'Echo', 'Settings');
        await page.getByRole('button', { name: 'Add Trigger' }).click();
        await page.getByLabel('Name', { exact: true }).fill(XSS_NAME);
        await page.getByRole('button', { name: 'Create', exact: true }).click();
        const view = triggerView(page, XSS_NAME);
        await view.waitFor(SHOWN);
        const url = await view.getByLabel('URL', { exact: true }).inputValue();
        const key = await view.getByLabel('Key', { exact: true }).inputValue();
        expect(await page.getByRole('cell', { name: XSS_NAME, exact: true }).count()).toBe(1);
        await checkScreen(page, adapterName, 'xss-trigger-name');

        await page.getByRole('tab', { name: 'History' }).click();
        await page.getByText('Live', { exact: true }).waitFor(SHOWN);
        const started = await triggerBot(asCalled(url, key), { shown: 'as text' });
        const runId = started.body.invocation.id as string;
        await runRow(page, runId).getByRole('cell', { name: XSS_NAME, exact: true }).waitFor(SHOWN);
        await runRow(page, runId).getByRole('link', { name: runId }).click();
        await page
          .getByRole('term')
          .filter({ hasText: 'Trigger' })
          .locator('xpath=following-sibling::dd[1]')
          .getByText(XSS_NAME)
          .waitFor(SHOWN);
        await checkScreen(page, adapterName, 'xss-run-detail');

        expect(await page.locator('img').count()).toBe(0);
      });
      // Had the name been parsed as HTML, the browser would have asked for …/x; alert() would have opened a
      // dialog, which asAdmin's check fails on.
      expect(requested.filter((path) => path.endsWith('/x'))).toEqual([]);
    });

    it('works by keyboard alone: tabs with the arrow keys, Add Trigger → Name → Create with Enter, a dialog closed with Escape', async () => {
      await asAdmin(t, async (page) => {
        await openBot(page, 'Echo', 'Settings');
        // The tab list: arrow keys move between Settings and History.
        await page.getByRole('tab', { name: 'Settings' }).focus();
        await page.keyboard.press('ArrowRight');
        await page.getByRole('heading', { level: 2, name: 'History' }).waitFor(SHOWN);
        expect(await page.getByRole('tab', { name: 'History' }).getAttribute('aria-selected')).toBe('true');
        await page.keyboard.press('ArrowLeft');
        await page.getByRole('heading', { level: 2, name: 'Bot Triggers' }).waitFor(SHOWN);

        // Add Trigger, typed and submitted from the keyboard.
        await page.getByRole('button', { name: 'Add Trigger' }).focus();
        await page.keyboard.press('Enter');
        await page.getByLabel('Name', { exact: true }).waitFor(SHOWN);
        await page.getByLabel('Name', { exact: true }).focus();
        await page.keyboard.type('Typed by keyboard');
        await page.keyboard.press('Enter');
        await triggerView(page, 'Typed by keyboard').waitFor(SHOWN);

        // A confirmation opened with Enter, closed with Escape: nothing changes.
        await page.getByRole('button', { name: 'Delete Typed by keyboard' }).focus();
        await page.keyboard.press('Enter');
        const dialog = page.getByRole('dialog');
        await dialog.waitFor(SHOWN);
        expect(await page.evaluate('document.activeElement?.closest("dialog") !== null')).toBe(true); // focus moved into it
        await page.keyboard.press('Escape');
        await dialog.waitFor({ state: 'hidden' });
        expect(await page.getByRole('button', { name: 'View Typed by keyboard' }).count()).toBe(1);
      });
    });

    it('fits a 360 px wide screen: Bots, Settings with a trigger open, History and a run, with nothing to scroll sideways', async () => {
      const trigger = await createTrigger(t, 'echo', 'Phone trigger');
      const runId = await startRun(trigger, { on: 'a phone' });
      await syncUntilFinished(trigger, runId);
      await asAdmin(
        t,
        async (page) => {
          const fits = async (name: string) => {
            const { scrollWidth, clientWidth } = await page.evaluate<{ scrollWidth: number; clientWidth: number }>(
              '({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth })',
            );
            expect({ name, scrollWidth }).toEqual({ name, scrollWidth: clientWidth });
            await checkScreen(page, adapterName, `360-${name}`);
          };
          await fits('bots');
          await openBot(page, 'Echo', 'Settings');
          await page.getByRole('button', { name: 'View Phone trigger' }).click();
          await triggerView(page, 'Phone trigger').waitFor(SHOWN);
          await fits('trigger-view');
          await page.getByRole('button', { name: 'Add Trigger' }).click();
          await page.getByLabel('Name', { exact: true }).waitFor(SHOWN);
          await fits('add-trigger');
          await page.getByRole('tab', { name: 'History' }).click();
          await runRow(page, runId).getByText('on: a phone').waitFor(SHOWN);
          await fits('history');
          await runRow(page, runId).getByRole('link', { name: runId }).click();
          await page.getByRole('heading', { level: 1, name: `Run ${runId}` }).waitFor(SHOWN);
          await fits('run-detail');
        },
        PHONE,
      );
    });
  });

  describeOnEveryAdapter('admin screens, inputs hidden (the default)', ({ adapterName, makeAdapter }) => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startAdminApp(makeAdapter, {});
    });
    afterAll(async () => {
      await t?.close();
    });

    it('Replay sends the run’s own inputs, unseen; other inputs need writing first; the balance is labelled as the account’s', async () => {
      const trigger = await createTrigger(t, 'echo', 'Hidden inputs trigger');
      const runId = await startRun(trigger, { greeting: 'kept as it was' });
      await syncUntilFinished(trigger, runId);
      await asAdmin(t, async (page) => {
        await openBot(page, 'Echo', 'Settings');
        await page
          .getByRole('term')
          .filter({ hasText: /^Account balance \(credits\)$/ })
          .waitFor(SHOWN);
        await page.getByLabel('New account balance (credits)').fill('900');
        await page.getByRole('button', { name: 'Save balance' }).click();
        await page.getByText('Saved: the account has 900 credits.').waitFor(SHOWN);

        await page.getByRole('tab', { name: 'History' }).click();
        await runRow(page, runId).getByRole('link', { name: runId }).click();
        await page.getByRole('heading', { level: 1, name: `Run ${runId}` }).waitFor(SHOWN);
        await page.getByText(INPUTS_HIDDEN).waitFor(SHOWN);
        expect(await page.getByLabel('Inputs as JSON').count()).toBe(0); // no inputs on the page (the outputs echo them)
        await checkScreen(page, adapterName, 'run-detail-inputs-hidden');

        await page.getByRole('button', { name: 'Replay with these inputs' }).click();
        await page.getByText('Write the inputs to send first, or choose “Replay” to send the run’s own.').waitFor(SHOWN);

        await page.getByRole('button', { name: 'Replay', exact: true }).click();
        const replayHeading = page.getByRole('heading', { level: 1, name: /^Run / }).filter({ hasNotText: runId });
        await replayHeading.waitFor(SHOWN);
        const replayId = (await replayHeading.innerText()).replace(/^Run /, '');
        const replayed = await syncUntilFinished(trigger, replayId);
        expect(replayed.body).toEqual({ success: true, outputs: [{ title: 'greeting', message: 'kept as it was' }] });
      });
    });
  });

  describeOnEveryAdapter('admin screens opened with HTTP Basic credentials in the URL', ({ adapterName, makeAdapter }) => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      const port = await freePort();
      // No keySecret: a key is shown once, and the view says which option shows it again.
      t = await startWebhookApp(makeAdapter, {
        port,
        options: {
          publicBaseUrl: `http://127.0.0.1:${port}`,
          accounts: { acct: { credits: 100 } },
          rateLimits: UNTHROTTLED,
          shutdownGraceMs: 200,
        },
        imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [BasicChallengeAdminGuard] })],
      });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('loads, changes and follows live runs from http://admin:<token>@host/admin (calls go to the origin, without credentials)', async () => {
      const { page, context, expectNoProblems } = await openPage(browser, {
        // The first request of the page, before the browser answers the challenge with the URL's credentials.
        allowConsoleErrors: [/Failed to load resource: the server responded with a status of 401/],
      });
      try {
        const withCredentials = new URL(`${t.baseUrl}/admin`);
        withCredentials.username = 'admin';
        withCredentials.password = ADMIN_TEST_TOKEN;
        await page.goto(withCredentials.href);
        const echo = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'Echo', exact: true }) });
        await echo.waitFor(SHOWN); // the bots came from the API
        expect(await page.getByText(/Could not reach the server/).count()).toBe(0);

        await openBot(page, 'Echo', 'Settings');
        await page.getByRole('button', { name: 'Add Trigger' }).click();
        await page.getByLabel('Name', { exact: true }).fill('Basic in the URL');
        await page.getByRole('button', { name: 'Create', exact: true }).click();
        const created = triggerView(page, 'Basic in the URL');
        await created.waitFor(SHOWN);
        const url = await created.getByLabel('URL', { exact: true }).inputValue();
        const key = await created.getByLabel('Key', { exact: true }).inputValue();
        await created.getByRole('button', { name: 'Close' }).click();
        await page.getByRole('button', { name: 'View Basic in the URL' }).click();
        const viewed = triggerView(page, 'Basic in the URL');
        await viewed.waitFor(SHOWN);
        await viewed.getByText(/The key is shown only once.*keySecret.* option set \(16 characters or more\)/).waitFor(SHOWN);
        expect(await viewed.getByLabel('Key', { exact: true }).count()).toBe(0);
        await checkScreen(page, adapterName, 'trigger-view-key-hidden');
        await viewed.getByRole('button', { name: 'Close' }).click();

        // The live stream opens too, and shows a run started over HTTP.
        await page.getByRole('tab', { name: 'History' }).click();
        await page.getByText('Live', { exact: true }).waitFor(SHOWN);
        const started = await triggerBot(asCalled(url, key), { via: 'basic' });
        expect(started.status).toBe(200);
        const runId = started.body.invocation.id as string;
        await runRow(page, runId).waitFor(SHOWN);
        expectNoProblems();
      } finally {
        await context.close();
      }
    });
  });

  describeOnEveryAdapter('admin screens, read-only', ({ adapterName, makeAdapter }) => {
    let t: WebhookTestApp;
    let trigger: TestTrigger;
    let finishedRun: string;
    let runningRun: string;
    beforeAll(async () => {
      t = await startAdminApp(makeAdapter, { readOnly: true });
      trigger = await createTrigger(t, 'slow', 'Read-only trigger');
      finishedRun = await startRun(trigger, { ms: 1 });
      await syncUntilFinished(trigger, finishedRun);
      runningRun = await startRun(trigger, { ms: 60_000 });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('shows no way to change anything, and the API refuses a change with 403', async () => {
      await asAdmin(t, async (page) => {
        const readOnlyNote = page.getByText('Read-only: changes are disabled.');
        await readOnlyNote.waitFor(SHOWN);
        await checkScreen(page, adapterName, 'read-only-bots');

        await openBot(page, 'slow', 'Settings');
        await page.getByRole('button', { name: 'View Read-only trigger' }).waitFor(SHOWN);
        for (const control of ['Add Trigger', 'Rotate key Read-only trigger', 'Delete Read-only trigger', 'Save balance']) {
          expect({ control, count: await page.getByRole('button', { name: control }).count() }).toEqual({ control, count: 0 });
        }
        await page.getByRole('button', { name: 'View Read-only trigger' }).click();
        await triggerView(page, 'Read-only trigger').waitFor(SHOWN);
        await checkScreen(page, adapterName, 'read-only-bot-settings');

        await page.getByRole('tab', { name: 'History' }).click();
        await runRow(page, runningRun).getByText('running', { exact: true }).waitFor(SHOWN);
        await checkScreen(page, adapterName, 'read-only-history');
        await runRow(page, runningRun).getByRole('link', { name: runningRun }).click();
        await page.getByRole('heading', { level: 1, name: `Run ${runningRun}` }).waitFor(SHOWN);
        await page.getByText(INPUTS_HIDDEN).waitFor(SHOWN);
        expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
        expect(await page.getByRole('button', { name: 'Replay' }).count()).toBe(0);
        expect(await readOnlyNote.count()).toBe(1);
        await checkScreen(page, adapterName, 'read-only-run-detail');
      });

      const refused = await send('PUT', `${t.baseUrl}/admin/api/accounts/acct/credits`, {
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
        json: { credits: 5 },
      });
      expect(refused.status).toBe(403);
      expect(
        (await send('GET', `${t.baseUrl}/admin/api/accounts/acct`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } })).body,
      ).toEqual({
        id: 'acct',
        credits: 998,
      });
      expect((await getStatus(trigger, finishedRun)).body.invocation.status).toBe('succeeded');
    });
  });
});
