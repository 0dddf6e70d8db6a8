/**
 * Outputs are bounded like bodies: a run whose outputs exceed maxOutputBytes fails with a clear error;
 * history lists carry outputs up to a small bound (flagged past it), a single run's view carries them whole.
 */
import { WebhookBot, WebhookBotHost, type BotInputs, type BotOutput } from '../../src/index.js';
import { LISTED_OUTPUTS_MAX } from '../../src/admin/admin-views.js';
import { syncInvocation, triggerBot } from '../helpers/http.js';
import {
  UNTHROTTLED,
  createTrigger,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  type TestTrigger,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';

@WebhookBot({ id: 'big', accountId: 'acct' })
class BigOutputBot extends WebhookBotHost {
  async main(inputs: BotInputs): Promise<BotOutput[]> {
    return [{ title: 'big', message: 'x'.repeat(Number(inputs.size)) }];
  }
}

const MAX = 64 * 1024;

describeOnEveryAdapterAndDatabase('output limits', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;
  let big: TestTrigger;

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      database,
      providers: [BigOutputBot],
      options: { rateLimits: UNTHROTTLED, maxOutputBytes: MAX },
    });
    big = await createTrigger(t, 'big');
    await t.admin.setCredits('acct', 1000);
  });
  afterAll(() => t.close());

  it('fails a run whose outputs are over maxOutputBytes, saying so, and stores none of them', async () => {
    const res = await triggerBot(big, { size: MAX });
    const sync = await syncInvocation(big, res.body.invocation.id);
    expect(sync.body).toEqual({
      success: false,
      status: 'failed',
      outputs: [],
      error: { message: expect.stringMatching(new RegExp(`over the limit of ${MAX} \\(maxOutputBytes\\)$`)), code: 'outputs_too_large' },
    });
  });

  it('stores returned outputs of exactly maxOutputBytes and fails a run one byte over', async () => {
    const overhead = Buffer.byteLength(JSON.stringify([{ title: 'big', message: '' }]));
    const exact = await triggerBot(big, { size: MAX - overhead });
    expect(await syncInvocation(big, exact.body.invocation.id)).toMatchObject({
      body: { success: true, outputs: [{ title: 'big', message: 'x'.repeat(MAX - overhead) }] },
    });
    const over = await triggerBot(big, { size: MAX - overhead + 1 });
    expect((await syncInvocation(big, over.body.invocation.id)).body).toEqual({
      success: false,
      status: 'failed',
      outputs: [],
      error: {
        message: expect.stringMatching(new RegExp(`^The bot's outputs are ${MAX + 1} bytes of JSON, over the limit of ${MAX} `)),
        code: 'outputs_too_large',
      },
    });
  });

  it('lists history with outputs up to the list bound and flags longer ones, which the single-run view gives whole', async () => {
    const small = await triggerBot(big, { size: 10 });
    const large = await triggerBot(big, { size: LISTED_OUTPUTS_MAX + 100 });
    for (const r of [small, large]) expect((await syncInvocation(big, r.body.invocation.id)).body.success).toBe(true);
    const list = await t.admin.listInvocations('big', { limit: 50 });
    const listedSmall = list.find((i) => i.id === small.body.invocation.id)!;
    const listedLarge = list.find((i) => i.id === large.body.invocation.id)!;
    expect(listedSmall).toMatchObject({ outputs: [{ title: 'big', message: 'x'.repeat(10) }], outputsTruncated: false });
    expect(listedLarge).toMatchObject({ status: 'succeeded', outputs: null, outputsTruncated: true });
    const whole = await t.admin.getInvocation(large.body.invocation.id);
    expect(whole?.outputs?.[0].message).toHaveLength(LISTED_OUTPUTS_MAX + 100);
    expect(whole?.outputsTruncated).toBe(false);
    // A page of 50 stays small however large the runs' outputs are.
    expect(Buffer.byteLength(JSON.stringify(list))).toBeLessThan(50 * (LISTED_OUTPUTS_MAX + 2048));
  });
});
