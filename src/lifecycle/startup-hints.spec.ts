import { Logger } from '@nestjs/common';
import { createWebhookFakes } from '../../test/fakes/webhook-fakes.js';
import type { WebhookTriggerModuleOptions } from '../options/webhook-trigger-options.interface.js';
import { AdminScreensPaths } from './admin-screens-paths.js';
import { StartupHints } from './startup-hints.js';

/** The hints of an app with these options and bots, the admin screens served at `adminPath` (if given). */
async function hintsOf(
  options: WebhookTriggerModuleOptions,
  setUp: (f: ReturnType<typeof createWebhookFakes>) => Promise<void> | void,
  { adminPath }: { adminPath?: string } = {},
): Promise<{ warnings: string[]; logs: string[] }> {
  const f = createWebhookFakes(options);
  await setUp(f);
  const screens = new AdminScreensPaths();
  if (adminPath !== undefined) screens.add(() => adminPath);
  const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  await new StartupHints(f.registry, f.triggers, f.accounts, screens, f.options).onApplicationBootstrap();
  return { warnings: warn.mock.calls.map(([m]) => String(m)), logs: log.mock.calls.map(([m]) => String(m)) };
}

describe('StartupHints', () => {
  afterEach(() => jest.restoreAllMocks());

  describe('the first trigger', () => {
    it('names the bot Settings screen where the admin screens are served', async () => {
      const { logs } = await hintsOf({}, (f) => void f.addBot({ id: 'sum.v2' }), { adminPath: '/api/ops/webhooks' });
      expect(logs).toHaveLength(1);
      expect(logs[0]).toContain('no triggers yet');
      expect(logs[0]).toContain('open /api/ops/webhooks#/bots/sum.v2/settings, then Bot Triggers → Add Trigger');
      expect(logs[0]).toContain("createTrigger('sum.v2'");
    });

    it('encodes the bot id in the screens path, as the screens route it', async () => {
      const { logs } = await hintsOf({}, (f) => void f.addBot({ id: 'a b' }), { adminPath: '/admin' });
      expect(logs[0]).toContain('open /admin#/bots/a%20b/settings');
    });

    it('says which module gives the screens when none is mounted', async () => {
      const { logs } = await hintsOf({}, (f) => void f.addBot({ id: 'echo' }));
      expect(logs[0]).toContain("(WebhookTriggerAdminModule: a bot's Settings → Bot Triggers → Add Trigger)");
      expect(logs[0]).not.toContain('#/bots/');
    });

    it('says nothing once a trigger exists, and nothing on a worker', async () => {
      const withTrigger = await hintsOf({}, async (f) => {
        f.addBot({ id: 'echo' });
        await f.addTrigger('echo');
      });
      expect(withTrigger.logs).toEqual([]);
      const worker = await hintsOf({ role: 'worker', redis: { url: 'redis://127.0.0.1:6379' } }, (f) => void f.addBot({ id: 'echo' }));
      expect(worker.logs).toEqual([]);
    });
  });

  describe('accounts never opened', () => {
    it('warns once per account, naming it, its bots, the 402 and the fix', async () => {
      const { warnings } = await hintsOf({}, (f) => {
        f.addBot({ id: 'one', accountId: 'acme' });
        f.addBot({ id: 'two', accountId: 'acme' });
      });
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('account "acme" (of one, two) has not been funded yet, so its triggers answer 402');
      expect(warnings[0]).toContain('the "accounts" option or WebhookTriggersAdmin.setCredits');
      expect(warnings[0]).toContain('accounts: { "acme": { credits: 100 } }');
    });

    it('is silent for an account the accounts option opens, and for one with a balance (even 0)', async () => {
      const { warnings } = await hintsOf({ accounts: { acme: { credits: 5 } } }, async (f) => {
        f.addBot({ id: 'one', accountId: 'acme' });
        f.addBot({ id: 'two', accountId: 'spent' });
        await f.accounts.setBalance('spent', 0);
      });
      expect(warnings).toEqual([]);
    });

    it('does not take an inherited property of the accounts option for an opened account', async () => {
      const { warnings } = await hintsOf({}, (f) => void f.addBot({ id: 'one', accountId: 'constructor' }));
      expect(warnings).toEqual([expect.stringContaining('account "constructor"')]);
    });
  });
});
