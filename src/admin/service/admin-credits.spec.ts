import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { BAD_ACCOUNT_ID, BAD_CREDITS } from '../../errors/webhook-trigger.messages.js';
import { type AdminServicesApp, startAdminServices } from '../../../test/helpers/admin-services.js';

/** What `promise` rejects with, to check the error's class and message. */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (e: unknown) => e,
  );

describe('AdminCredits', () => {
  let a: AdminServicesApp;

  beforeEach(async () => {
    a = await startAdminServices();
  });
  afterEach(() => a.t.close());

  it('reads and sets an account balance; an unknown account has none', async () => {
    expect(await a.credits.getCredits('acme')).toBeNull();
    expect(await a.credits.setCredits('acme', 25)).toEqual({ id: 'acme', credits: 25 });
    expect(await a.credits.getCredits('acme')).toEqual({ id: 'acme', credits: 25 });
    expect(await a.credits.setCredits('acme', 0)).toEqual({ id: 'acme', credits: 0 });
    expect(await a.credits.getCredits('acme')).toEqual({ id: 'acme', credits: 0 });
  });

  it('refuses a balance that is not a whole number ≥ 0, and keeps the old one', async () => {
    await a.credits.setCredits('acme', 7);
    for (const credits of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '5' as unknown as number]) {
      const error = await failure(a.credits.setCredits('acme', credits));
      expect(error).toBeInstanceOf(WebhookAdminInputError);
      expect((error as Error).message).toBe(BAD_CREDITS);
    }
    expect(await a.credits.getCredits('acme')).toEqual({ id: 'acme', credits: 7 });
  });

  it('refuses an account id that cannot be one, and reads it as unknown', async () => {
    for (const id of ['', 'a\u0000b', 'x'.repeat(201), 42 as unknown as string]) {
      const error = await failure(a.credits.setCredits(id, 1));
      expect(error).toBeInstanceOf(WebhookAdminInputError);
      expect((error as Error).message).toBe(BAD_ACCOUNT_ID);
    }
    expect(await a.credits.getCredits('a\u0000b')).toBeNull();
  });
});
