/**
 * One key holder's large runs cannot make another's history slow or huge (docs/security.md, "Isolation between
 * tenants"): a history page reads inputs, outputs and errors bounded in SQL, flags what it left out, and a run's
 * detail still shows it whole; a bot's thrown message is stored cut at MAX_ERROR_MESSAGE_CHARS.
 */
import { WebhookBot, WebhookBotHost, WebhookTriggerAdminModule, type BotOutput } from '../../src/index.js';
import { HISTORY_PAGE_SIZE } from '../../src/admin/admin-views.js';
import { MAX_ERROR_MESSAGE_CHARS } from '../../src/runs/run-error.js';
import { ADMIN_TEST_TOKEN, TestAdminGuard } from '../fixtures/admin-guard.js';
import { storeLargeRuns, storedInvocations } from '../helpers/db.js';
import { send, startRun, syncUntilFinished } from '../helpers/http.js';
import {
  UNTHROTTLED,
  createTrigger,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';

const AUTH = { Authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
const MB = 1024 * 1024;

/** Throws a 1 MB message: what a key holder's bot (or its inputs echoed into an error) can make. */
@WebhookBot({ id: 'loud-fail', accountId: 'acct' })
class LoudFailBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    throw new Error('start:' + 'x'.repeat(MB));
  }
}

describeOnEveryAdapterAndDatabase('history bounds', ({ makeAdapter, database }) => {
  jest.setTimeout(120_000);
  let t: WebhookTestApp;
  let api: string;
  const get = (path: string) => send('GET', `${api}${path}`, { headers: AUTH });

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      database,
      providers: [LoudFailBot],
      options: { rateLimits: UNTHROTTLED, accounts: { acct: { credits: 1000 } } },
      imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [TestAdminGuard], showInputs: true })],
    });
    api = `${t.baseUrl}/admin/api`;
  });
  afterAll(() => t.close());

  it('answers the History page of 600 runs of ~1 MB inputs under 1 MB and 500 ms, and a run whole by id', async () => {
    const trigger = await createTrigger(t, 'echo', 'large runs');
    await storeLargeRuns(t.store, {
      triggerId: trigger.id,
      botId: 'echo',
      accountId: 'acct',
      count: 600,
      inputsChars: MB,
      errorChars: 64 * 1024,
      from: Date.now() - 60_000,
    });
    // The page the screens ask for: their default page size (HISTORY_PAGE_SIZE, no limit parameter). Asked three
    // times, each answer bounded in size; the fastest under 500 ms (the first may meet the database still writing
    // out the 600 MB just stored; a page that read the inputs whole would take seconds every time).
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await get('/bots/echo/invocations'));
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.body).toHaveLength(HISTORY_PAGE_SIZE);
      expect(Buffer.byteLength(answer.text)).toBeLessThan(MB);
    }
    expect(Math.min(...answers.map((answer) => answer.elapsedMs))).toBeLessThan(500);
    const page = answers[0];
    const newest = page.body[0];
    expect(newest).toMatchObject({ id: 'inv_' + '600'.padStart(22, '0'), status: 'failed', error: null, errorTruncated: true });
    expect(newest).not.toHaveProperty('inputs');

    const detail = await get(`/invocations/${newest.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.inputs.blob.length).toBeGreaterThanOrEqual(MB);
    expect(detail.body.error.message.length).toBeGreaterThanOrEqual(64 * 1024);
    expect(detail.body.errorTruncated).toBe(false);
  });

  it("stores a bot's 1 MB error message cut at MAX_ERROR_MESSAGE_CHARS, and lists it whole", async () => {
    const trigger = await createTrigger(t, 'loud-fail');
    const id = await startRun(trigger);
    const sync = await syncUntilFinished(trigger, id);
    expect(sync.body).toMatchObject({ success: false, status: 'failed' });
    const message: string = sync.body.error.message;
    expect(message.length).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS);
    expect(message.startsWith('start:xxx')).toBe(true);
    expect(message.endsWith('(message cut)')).toBe(true);

    const [row] = (await storedInvocations(t.store, trigger.id)) as unknown as Array<{ error: string }>;
    expect(row.error.length).toBeLessThan(MAX_ERROR_MESSAGE_CHARS + 100);
    // Short enough to list: the History row carries it, unflagged.
    const listed = (await get(`/bots/loud-fail/invocations`)).body.find((r: { id: string }) => r.id === id);
    expect(listed).toMatchObject({ error: { message }, errorTruncated: false });
  });
});
