/**
 * The callback screens of the admin (docs/callbacks.md, docs/admin.md) in real Chromium, on Express and Fastify,
 * behind the sample app's sign-in: a trigger's View → Callback (set, refused URL, edit, rotate the secret, remove,
 * a disabled callback enabled again) and Deliveries (live, Redeliver), and a run's Deliveries in its detail. The
 * callbacks go to a real receiver on 127.0.0.1 (opened with callbackAllowedHosts), whose requests are checked
 * with verifyWebhookSignature. Driven by visible labels, roles and text; every screen checked with axe-core and
 * saved as a screenshot; no console error, CSP violation, page dialog or request off 127.0.0.1.
 */
import type { Browser, Locator, Page, ViewportSize } from 'playwright-core';
import { verifyWebhookSignature, WebhookTriggerAdminModule, type WebhookTriggerModuleOptions } from '../../src/index.js';
import { AdminAuthModule } from '../../sample-app/src/admin/admin-auth.module.js';
import { AdminGuard } from '../../sample-app/src/admin/admin.guard.js';
import { startCallbackReceiver, type CallbackReceiver, type ReceivedCallback } from '../helpers/callback-receiver.js';
import { send, startRun, syncUntilFinished, until } from '../helpers/http.js';
import { freePort } from '../helpers/sample-app-process.js';
import {
  createTrigger,
  describeOnEveryAdapter,
  startWebhookApp,
  type AdapterFactory,
  UNTHROTTLED,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';
import { describeInBrowser, expectAccessible, launchBrowser, openPage, screenshot, type WatchedPage } from './browser.js';

jest.setTimeout(90_000);

const ADMIN_TOKEN = 'browser-callback-screens-token-7d21';
const AUTH = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const PHONE: ViewportSize = { width: 360, height: 740 };
/** The browser's own console line for the PUT the SSRF check refuses (the page shows the refusal itself). */
const REFUSED_PUT =
  /^Failed to load resource: the server responded with a status of 400 \(Bad Request\) \(http:\/\/127\.0\.0\.1:\d+\/admin\/api\/triggers\/trg_[\w-]+\/callback:0\)$/;
/** How long a screen may take to show what a test waits for. */
const SHOWN = { timeout: 10_000 };

interface CallbackBody {
  type: string;
  data: { invocation: { id: string; status: string } };
}

/** An app whose callbacks may reach 127.0.0.1, the admin at /admin behind the sample's sign-in. */
async function startCallbackApp(makeAdapter: AdapterFactory, admin: { readOnly?: boolean }, keySecret?: string): Promise<WebhookTestApp> {
  const port = await freePort();
  const auth = AdminAuthModule.forRoot({ adminToken: ADMIN_TOKEN });
  const options: WebhookTriggerModuleOptions = {
    keySecret,
    publicBaseUrl: `http://127.0.0.1:${port}`,
    accounts: { acct: { credits: 1_000 } },
    rateLimits: UNTHROTTLED,
    shutdownGraceMs: 200,
    callbackAllowedHosts: ['127.0.0.1'],
    callbackRetryScheduleMs: [0, 200, 200],
    callbackTimeoutMs: 2_000,
  };
  return startWebhookApp(makeAdapter, {
    port,
    options,
    imports: [auth, WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [AdminGuard], imports: [auth], ...admin })],
  });
}

describeInBrowser('callback screens in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function signedIn(t: WebhookTestApp, viewport?: ViewportSize, allowConsoleErrors?: RegExp[]): Promise<WatchedPage> {
    const watched = await openPage(browser, { viewport, allowConsoleErrors });
    await watched.page.goto(`${t.baseUrl}/admin`);
    await watched.page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await watched.page.getByRole('button', { name: 'Sign in' }).click();
    await watched.page.getByRole('heading', { level: 1, name: 'Bots' }).waitFor(SHOWN);
    return watched;
  }

  /** Runs `use` on a signed-in page, then asserts the page saw no problem; the context is closed either way. */
  async function asAdmin(
    t: WebhookTestApp,
    use: (page: Page) => Promise<void>,
    viewport?: ViewportSize,
    allowConsoleErrors?: RegExp[],
  ): Promise<void> {
    const watched = await signedIn(t, viewport, allowConsoleErrors);
    try {
      await use(watched.page);
      watched.expectNoProblems();
    } finally {
      await watched.context.close();
    }
  }

  /** Bots → Echo → Settings → View the trigger (from Bots, or from Settings when `onSettings`); returns its view. */
  async function viewTrigger(page: Page, name: string, onSettings = false): Promise<Locator> {
    if (!onSettings) await page.getByRole('link', { name: 'Echo', exact: true }).click();
    await page.getByRole('heading', { level: 2, name: 'Bot Triggers' }).waitFor(SHOWN);
    await page.getByRole('button', { name: `View ${name}` }).click();
    const view = page.getByRole('region', { name: `Trigger “${name}”` });
    await view.waitFor(SHOWN);
    return view;
  }

  /** The row of a delivery log for this event of this run. */
  const deliveryRow = (page: Page, log: Locator, event: string, runId?: string): Locator => {
    const rows = log.getByRole('row').filter({ has: page.getByText(event, { exact: true }) });
    return runId ? rows.filter({ has: page.getByRole('link', { name: runId, exact: true }) }) : rows;
  };

  /** Whether the element has the keyboard focus. */
  const isFocused = (locator: Locator): Promise<boolean> =>
    locator.evaluate((el: { matches(selector: string): boolean }) => el.matches(':focus'));

  /** The cell of a row under a column (the cells carry their column's label). */
  const cell = (row: Locator, column: string): Locator => row.locator(`td[data-label="${column}"]`);

  async function checkScreen(page: Page, adapterName: string, name: string): Promise<void> {
    await expectAccessible(page, `the ${name} screen`);
    await screenshot(page, adapterName, name);
  }

  const fits = async (page: Page, adapterName: string, name: string) => {
    const { scrollWidth, clientWidth } = await page.evaluate<{ scrollWidth: number; clientWidth: number }>(
      '({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth })',
    );
    expect({ name, scrollWidth }).toEqual({ name, scrollWidth: clientWidth });
    await checkScreen(page, adapterName, `360-${name}`);
  };

  /** The requests the receiver got for this run and event, each verified with `secret`. */
  function received(receiver: CallbackReceiver, runId: string, type: string): ReceivedCallback[] {
    return receiver.received.filter((call) => {
      const body = JSON.parse(call.body.toString('utf8')) as CallbackBody;
      return body.type === type && body.data.invocation.id === runId;
    });
  }

  describeOnEveryAdapter('callback screens', ({ adapterName, makeAdapter }) => {
    let t: WebhookTestApp;
    let receiver: CallbackReceiver;
    beforeAll(async () => {
      receiver = await startCallbackReceiver();
      t = await startCallbackApp(makeAdapter, {}, 'browser-callback-screens-key-secret-0123');
    });
    afterAll(async () => {
      await t?.close();
      await receiver?.close();
    });
    beforeEach(() => receiver.respond((res) => res.writeHead(200).end()));

    it('sets a callback from the trigger view (a private address refused next to the field); a run is delivered, signed, live; Redeliver, Rotate secret, Remove callback', async () => {
      const trigger = await createTrigger(t, 'echo', 'Callback trigger');
      const hookUrl = `${receiver.origin}/hooks/browser`;
      await asAdmin(
        t,
        async (page) => {
          const view = await viewTrigger(page, 'Callback trigger');
          const callback = view.getByRole('region', { name: 'Callback' });
          const deliveries = view.getByRole('region', { name: 'Deliveries' });
          await deliveries.getByText('No deliveries yet.').waitFor(SHOWN);
          const completed = callback.getByLabel('invocation.completed');
          expect(await completed.isChecked()).toBe(true);
          expect(await completed.isDisabled()).toBe(true);
          expect(await callback.getByLabel('invocation.started').isChecked()).toBe(false);
          await checkScreen(page, adapterName, 'callback-none');

          // A private address: the server's SSRF check refuses it, and the form says so beside the URL.
          const urlField = callback.getByLabel('Callback URL');
          await urlField.fill('http://10.0.0.1/x');
          await callback.getByRole('button', { name: 'Save callback' }).click();
          await callback.getByRole('alert').filter({ hasText: 'Invalid callback URL: 10.0.0.1 is a private address' }).waitFor(SHOWN);
          expect(await urlField.getAttribute('aria-invalid')).toBe('true');
          expect(await isFocused(urlField)).toBe(true);
          await checkScreen(page, adapterName, 'callback-refused');
          expect((await send('GET', `${t.baseUrl}/admin/api/triggers/${trigger.id}/callback`, { headers: AUTH })).status).toBe(404);

          await urlField.fill(hookUrl);
          await callback.getByLabel('invocation.started').check();
          await callback.getByRole('button', { name: 'Save callback' }).click();
          await callback.getByRole('status').filter({ hasText: 'Set the callback. Give its secret to the receiver.' }).waitFor(SHOWN);
          const secret = await callback.getByLabel('Secret', { exact: true }).inputValue();
          expect(secret).toMatch(/^whsec_/);
          await callback.getByText(hookUrl, { exact: true }).waitFor(SHOWN);
          await callback.getByText('Enabled', { exact: true }).waitFor(SHOWN);
          expect(await callback.getByRole('definition').nth(1).innerText()).toBe('invocation.started, invocation.completed');
          expect(await callback.getByRole('button', { name: 'Copy secret' }).count()).toBe(1);
          await page.getByText('Live', { exact: true }).waitFor(SHOWN); // the log follows the trigger's runs
          await checkScreen(page, adapterName, 'callback-set');

          // A run over HTTP: both its deliveries show up delivered without a reload, and the receiver got them signed.
          let documentLoads = 0;
          page.on('load', () => documentLoads++);
          const runId = await startRun(trigger, { greeting: 'to the receiver' });
          await syncUntilFinished(trigger, runId);
          const completedRow = deliveryRow(page, deliveries, 'invocation.completed', runId);
          const startedRow = deliveryRow(page, deliveries, 'invocation.started', runId);
          await cell(completedRow, 'Status').getByText('delivered', { exact: true }).waitFor(SHOWN);
          await cell(startedRow, 'Status').getByText('delivered', { exact: true }).waitFor(SHOWN);
          expect(documentLoads).toBe(0);
          expect(await cell(completedRow, 'Attempts').innerText()).toBe('1');
          expect(await cell(completedRow, 'Response').innerText()).toBe('200');
          expect(await cell(completedRow, 'Latency').innerText()).toMatch(/^\d+ ms$/);
          expect(await cell(completedRow, 'Next attempt').innerText()).toBe('—');
          // Newest first: completed above started.
          const events = await deliveries.locator('td[data-label="Event"]').allInnerTexts();
          expect(events.slice(0, 2)).toEqual(['invocation.completed', 'invocation.started']);
          const [first] = received(receiver, runId, 'invocation.completed');
          expect(first.path).toBe('/hooks/browser');
          const body = verifyWebhookSignature<CallbackBody>(secret, first.headers, first.body);
          expect(body.data.invocation).toMatchObject({ id: runId, status: 'succeeded' });
          await checkScreen(page, adapterName, 'deliveries');

          // Redeliver: the same webhook-id again, attempts counted on.
          await completedRow.getByRole('button', { name: /^Redeliver/ }).click();
          await deliveries
            .getByRole('status')
            .filter({ hasText: `Redelivering invocation.completed of ${runId}` })
            .waitFor(SHOWN);
          await until(() => received(receiver, runId, 'invocation.completed').length === 2, 10_000, 'the redelivery');
          await cell(completedRow, 'Attempts').getByText('2', { exact: true }).waitFor(SHOWN);
          await cell(completedRow, 'Status').getByText('delivered', { exact: true }).waitFor(SHOWN);
          const [, again] = received(receiver, runId, 'invocation.completed');
          expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
          verifyWebhookSignature(secret, again.headers, again.body);
          await checkScreen(page, adapterName, 'redelivered');

          // Rotate secret: "Keep it" changes nothing; confirmed, the view shows a new secret that signs from now on.
          await callback.getByRole('button', { name: 'Rotate secret' }).click();
          let dialog = page.getByRole('dialog', { name: /^Rotate the callback secret of “Callback trigger”\?/ });
          await dialog.waitFor(SHOWN);
          await checkScreen(page, adapterName, 'rotate-secret-dialog');
          await dialog.getByRole('button', { name: 'Keep it' }).click();
          await dialog.waitFor({ state: 'hidden' });
          expect(await callback.getByLabel('Secret', { exact: true }).inputValue()).toBe(secret);
          await callback.getByRole('button', { name: 'Rotate secret' }).click();
          await dialog.getByRole('button', { name: 'Rotate secret' }).click();
          await callback.getByRole('status').filter({ hasText: 'Rotated the secret: give the new one to the receiver.' }).waitFor(SHOWN);
          const rotated = await callback.getByLabel('Secret', { exact: true }).inputValue();
          expect(rotated).toMatch(/^whsec_/);
          expect(rotated).not.toBe(secret);
          await checkScreen(page, adapterName, 'secret-rotated');
          // By keyboard this time: focus stays on the row's button while the log is drawn again.
          await completedRow.getByRole('button', { name: /^Redeliver/ }).focus();
          await page.keyboard.press('Enter');
          await until(() => received(receiver, runId, 'invocation.completed').length === 3, 10_000, 'the redelivery after rotating');
          await cell(completedRow, 'Attempts').getByText('3', { exact: true }).waitFor(SHOWN);
          await cell(completedRow, 'Status').getByText('delivered', { exact: true }).waitFor(SHOWN);
          expect(await isFocused(completedRow.getByRole('button', { name: /^Redeliver/ }))).toBe(true);
          const third = received(receiver, runId, 'invocation.completed')[2];
          verifyWebhookSignature(rotated, third.headers, third.body);
          expect(() => verifyWebhookSignature(secret, third.headers, third.body)).toThrow();

          // Edit: another path and only completed.
          await callback.getByRole('button', { name: 'Edit callback' }).click();
          const editUrl = callback.getByLabel('Callback URL');
          expect(await editUrl.inputValue()).toBe(hookUrl);
          expect(await callback.getByLabel('invocation.started').isChecked()).toBe(true);
          await editUrl.fill(`${hookUrl}/edited`);
          await callback.getByLabel('invocation.started').uncheck();
          await checkScreen(page, adapterName, 'callback-edit');
          // Escape closes the form without saving; Edit callback opens it again as it was left.
          await page.keyboard.press('Escape');
          await editUrl.waitFor({ state: 'hidden' });
          expect(await isFocused(callback.getByRole('button', { name: 'Edit callback' }))).toBe(true);
          await callback.getByRole('button', { name: 'Edit callback' }).click();
          expect(await editUrl.inputValue()).toBe(`${hookUrl}/edited`);
          await callback.getByRole('button', { name: 'Save callback' }).click();
          await callback.getByRole('status').filter({ hasText: 'Saved the callback.' }).waitFor(SHOWN);
          await callback.getByText(`${hookUrl}/edited`, { exact: true }).waitFor(SHOWN);
          expect(await callback.getByLabel('Secret', { exact: true }).inputValue()).toBe(rotated);
          const saved = await send('GET', `${t.baseUrl}/admin/api/triggers/${trigger.id}/callback`, { headers: AUTH });
          expect(saved.body).toMatchObject({ url: `${hookUrl}/edited`, events: ['invocation.completed'], secret: rotated, enabled: true });

          // The run's own detail, from the log's link: its deliveries, oldest first.
          await completedRow.getByRole('link', { name: runId }).click();
          await page.getByRole('heading', { level: 1, name: `Run ${runId}` }).waitFor(SHOWN);
          const runDeliveries = page.getByRole('region', { name: 'Deliveries' });
          await runDeliveries.getByRole('row').filter({ hasText: 'invocation.completed' }).waitFor(SHOWN);
          expect(await runDeliveries.locator('td[data-label="Event"]').allInnerTexts()).toEqual([
            'invocation.started',
            'invocation.completed',
          ]);
          expect(await runDeliveries.locator('td[data-label="Status"]').allInnerTexts()).toEqual(['delivered', 'delivered']);
          expect(await runDeliveries.locator('td[data-label="Attempts"]').allInnerTexts()).toEqual(['1', '3']);
          expect(await runDeliveries.locator('td[data-label="Invocation"]').count()).toBe(0);
          await checkScreen(page, adapterName, 'run-deliveries');

          // Remove callback, from the view again: "Keep it" first, then confirmed; the form to set one is back.
          await page.goBack();
          const viewAgain = await viewTrigger(page, 'Callback trigger', true);
          const callbackAgain = viewAgain.getByRole('region', { name: 'Callback' });
          await callbackAgain.getByRole('button', { name: 'Remove callback' }).click();
          dialog = page.getByRole('dialog', { name: /^Remove the callback of “Callback trigger”\?/ });
          await dialog.waitFor(SHOWN);
          await checkScreen(page, adapterName, 'remove-callback-dialog');
          await dialog.getByRole('button', { name: 'Keep it' }).click();
          await dialog.waitFor({ state: 'hidden' });
          expect((await send('GET', `${t.baseUrl}/admin/api/triggers/${trigger.id}/callback`, { headers: AUTH })).status).toBe(200);
          await callbackAgain.getByRole('button', { name: 'Remove callback' }).click();
          await dialog.getByRole('button', { name: 'Remove callback' }).click();
          await callbackAgain.getByRole('status').filter({ hasText: 'Removed the callback.' }).waitFor(SHOWN);
          await callbackAgain.getByLabel('Callback URL').waitFor(SHOWN);
          expect(await callbackAgain.getByLabel('Callback URL').inputValue()).toBe('');
          // The log stays: the deliveries made are history.
          expect(
            await deliveryRow(page, viewAgain.getByRole('region', { name: 'Deliveries' }), 'invocation.completed', runId).count(),
          ).toBe(1);
          await checkScreen(page, adapterName, 'callback-removed');
          expect((await send('GET', `${t.baseUrl}/admin/api/triggers/${trigger.id}/callback`, { headers: AUTH })).status).toBe(404);
        },
        undefined,
        [REFUSED_PUT],
      );
    });

    it('a receiver answering 410 disables the callback: the view says why, and "Enable callback" turns it back on; fits 360 px', async () => {
      const trigger = await createTrigger(t, 'echo', 'Gone trigger');
      expect(await t.admin.setCallback(trigger.id, { url: `${receiver.origin}/gone` })).not.toBeNull();
      receiver.respond((res) => res.writeHead(410).end());
      const runId = await startRun(trigger, { greeting: 'gone' });
      await syncUntilFinished(trigger, runId);
      await until(async () => (await t.admin.getCallback(trigger.id))?.enabled === false, 10_000, 'the callback disabled');
      receiver.respond((res) => res.writeHead(200).end());

      await asAdmin(
        t,
        async (page) => {
          const view = await viewTrigger(page, 'Gone trigger');
          const callback = view.getByRole('region', { name: 'Callback' });
          const state = callback.getByRole('term').filter({ hasText: 'State' }).locator('xpath=following-sibling::dd[1]');
          await state.getByText(/^Disabled: .*410/).waitFor(SHOWN);
          const row = deliveryRow(page, view.getByRole('region', { name: 'Deliveries' }), 'invocation.completed', runId);
          await cell(row, 'Status').getByText('failed', { exact: true }).waitFor(SHOWN);
          expect(await cell(row, 'Response').innerText()).toMatch(/^410/);
          await fits(page, adapterName, 'callback-disabled');

          await callback.getByRole('button', { name: 'Enable callback' }).click();
          await callback.getByRole('status').filter({ hasText: 'Enabled the callback again.' }).waitFor(SHOWN);
          await state.getByText('Enabled', { exact: true }).waitFor(SHOWN);
          expect(await callback.getByRole('button', { name: 'Enable callback' }).count()).toBe(0);
          expect((await t.admin.getCallback(trigger.id))?.enabled).toBe(true);

          // A failed delivery redelivered once the receiver is back: delivered.
          await row.getByRole('button', { name: /^Redeliver/ }).click();
          await cell(row, 'Status').getByText('delivered', { exact: true }).waitFor(SHOWN);
          await fits(page, adapterName, 'callback-enabled');

          await row.getByRole('link', { name: runId }).click();
          await page.getByRole('heading', { level: 1, name: `Run ${runId}` }).waitFor(SHOWN);
          await page.getByRole('region', { name: 'Deliveries' }).getByText('delivered', { exact: true }).waitFor(SHOWN);
          await fits(page, adapterName, 'run-deliveries');
        },
        PHONE,
      );
    });
  });

  describeOnEveryAdapter('callback screens, read-only, without keySecret', ({ adapterName, makeAdapter }) => {
    let t: WebhookTestApp;
    let receiver: CallbackReceiver;
    let runId: string;
    beforeAll(async () => {
      receiver = await startCallbackReceiver();
      t = await startCallbackApp(makeAdapter, { readOnly: true });
      const trigger = await createTrigger(t, 'echo', 'Read-only callback');
      const set = await t.admin.setCallback(trigger.id, { url: `${receiver.origin}/ro`, events: ['invocation.output'] });
      expect(set?.secret).toMatch(/^whsec_/); // shown once, when set
      runId = await startRun(trigger, { greeting: 'read only' });
      await syncUntilFinished(trigger, runId);
      await until(() => receiver.received.length >= 1, 10_000, 'the delivery');
      await until(
        async () => (await t.admin.listInvocationDeliveries(runId)).every((d) => d.status === 'delivered'),
        10_000,
        'the deliveries recorded',
      );
    });
    afterAll(async () => {
      await t?.close();
      await receiver?.close();
    });

    it('shows the callback and its deliveries with no way to change them; the secret is not shown again', async () => {
      await asAdmin(t, async (page) => {
        const view = await viewTrigger(page, 'Read-only callback');
        const callback = view.getByRole('region', { name: 'Callback' });
        await callback.getByText(`${receiver.origin}/ro`, { exact: true }).waitFor(SHOWN);
        await callback.getByText('The secret is shown only when the callback is set or its secret rotated.').waitFor(SHOWN);
        expect(await callback.getByText('invocation.output', { exact: true }).count()).toBe(1);
        const deliveries = view.getByRole('region', { name: 'Deliveries' });
        const row = deliveryRow(page, deliveries, 'invocation.completed', runId);
        await cell(row, 'Status').getByText('delivered', { exact: true }).waitFor(SHOWN);
        for (const control of ['Save callback', 'Edit callback', 'Rotate secret', 'Remove callback', 'Enable callback', 'Redeliver']) {
          expect({ control, count: await page.getByRole('button', { name: control }).count() }).toEqual({ control, count: 0 });
        }
        expect(await callback.getByLabel('Callback URL').count()).toBe(0);
        expect(await deliveries.getByRole('columnheader', { name: 'Actions' }).count()).toBe(0);
        await checkScreen(page, adapterName, 'read-only-callback');

        await row.getByRole('link', { name: runId }).click();
        await page.getByRole('heading', { level: 1, name: `Run ${runId}` }).waitFor(SHOWN);
        const runDeliveries = page.getByRole('region', { name: 'Deliveries' });
        await runDeliveries.getByText('invocation.completed', { exact: true }).waitFor(SHOWN);
        expect(await runDeliveries.getByRole('button', { name: 'Redeliver' }).count()).toBe(0);
        await checkScreen(page, adapterName, 'read-only-run-deliveries');
      });
    });
  });
});
