/**
 * The exported admin service checks what it is given itself: control characters and over-long ids or
 * names get its own errors (400 for the host to map) or "unknown", never a database error (on
 * PostgreSQL a NUL byte or a 201-character account id used to surface as a 500).
 */
import { InvocationAlreadyFinishedError, WebhookAdminInputError, WebhookTriggerError } from '../../src/index.js';
import { syncInvocation, triggerBot } from '../helpers/http.js';
import { describeOnEveryAdapterAndDatabase, startWebhookApp, triggerOn, type WebhookTestApp } from '../helpers/webhook-app.js';

describeOnEveryAdapterAndDatabase('admin service input', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, { database });
  });
  afterAll(() => t.close());

  const NUL = 'a\u0000b';
  const LONG = 'a'.repeat(201);

  it.each([
    ['a NUL in an account id', () => t.admin.setCredits(NUL, 1)],
    ['an account id over 200 characters', () => t.admin.setCredits(LONG, 1)],
    ['a NUL in a trigger name', () => t.admin.createTrigger('echo', { name: NUL })],
    ['a trigger name over 200 characters', () => t.admin.createTrigger('echo', { name: LONG })],
    ['a NUL in a bot id', () => t.admin.createTrigger(NUL, { name: 'x' })],
    ['negative credits', () => t.admin.setCredits('acct', -1)],
  ])('refuses %s with WebhookAdminInputError', async (_case, call) => {
    await expect(call()).rejects.toBeInstanceOf(WebhookAdminInputError);
  });

  it.each([
    ['getCredits', () => t.admin.getCredits(NUL)],
    ['getCredits (long)', () => t.admin.getCredits(LONG)],
    ['viewTrigger', () => t.admin.viewTrigger(NUL)],
    ['rotateKey', () => t.admin.rotateKey(`trg_${NUL}`)],
    ['getInvocation', () => t.admin.getInvocation(NUL)],
  ])('reads an impossible id as unknown: %s → null', async (_case, call) => {
    await expect(call()).resolves.toBeNull();
  });

  it('reads impossible ids as unknown in lists and deletes too', async () => {
    await expect(t.admin.deleteTrigger(NUL)).resolves.toBe(false);
    await expect(t.admin.listTriggers(NUL)).resolves.toEqual([]);
    await expect(t.admin.listInvocations(NUL)).resolves.toEqual([]);
  });

  it('still takes 200-character ids and names', async () => {
    const id = 'b'.repeat(200);
    await expect(t.admin.setCredits(id, 3)).resolves.toEqual({ id, credits: 3 });
    await expect(t.admin.getCredits(id)).resolves.toEqual({ id, credits: 3 });
    const trigger = await t.admin.createTrigger('echo', { name: 'n'.repeat(200) });
    expect(trigger.name).toHaveLength(200);
  });
});

describeOnEveryAdapterAndDatabase('admin service answers and errors', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, { database });
    await t.admin.setCredits('acct', 10);
  });
  afterAll(() => t.close());

  it('answers a created trigger with its key, typed string (strict code needs no `!`), and refuses to cancel a finished run with the exported InvocationAlreadyFinishedError', async () => {
    const created = await t.admin.createTrigger('echo', { name: 'typed' });
    const key: string = created.key;
    const trigger = triggerOn(t, { id: created.id, key, botId: 'echo' });
    const started = await triggerBot(trigger, { hello: 'x' });
    const { id } = (started.body as { invocation: { id: string } }).invocation;
    expect((await syncInvocation(trigger, id)).status).toBe(200);
    const refused = t.admin.cancelInvocation(id);
    await expect(refused).rejects.toBeInstanceOf(InvocationAlreadyFinishedError);
    await expect(refused).rejects.toBeInstanceOf(WebhookTriggerError);
  });
});
