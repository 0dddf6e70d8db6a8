import { AdminCallbacks } from '../../src/admin/service/admin-callbacks.js';
import { AdminCredits } from '../../src/admin/service/admin-credits.js';
import { AdminRunHistory } from '../../src/admin/service/admin-run-history.js';
import { AdminTriggerKeys } from '../../src/admin/service/admin-trigger-keys.js';
import { AdminTriggers } from '../../src/admin/service/admin-triggers.js';
import {
  type BotOutput,
  InvocationRepository,
  TriggerRepository,
  WebhookBot,
  WebhookBotHost,
  type WebhookTriggerModuleExtras,
  type WebhookTriggerModuleOptions,
} from '../../src/index.js';
import { startWebhookApp, type WebhookTestApp } from './webhook-app.js';

/** The admin services' specs' one bot: 3 credits a run, on the account `acme`. */
@WebhookBot({ id: 'weather', name: 'Weather', credits: 3, accountId: 'acme' })
export class WeatherBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [{ title: 'weather', message: 'sunny' }];
  }
}

export interface AdminServicesApp {
  t: WebhookTestApp;
  triggers: AdminTriggers;
  keys: AdminTriggerKeys;
  history: AdminRunHistory;
  callbacks: AdminCallbacks;
  credits: AdminCredits;
  /** The module's stores, to put rows in place as a test needs them. */
  triggerRows: TriggerRepository;
  invocationRows: InvocationRepository;
}

/**
 * The parts of the admin service as the module builds them (every provider it always has, nothing left
 * out), in a real app on a fresh SQLite file with `WeatherBot` only.
 */
export async function startAdminServices(
  options: WebhookTriggerModuleOptions = {},
  dbFile?: string,
  extras?: WebhookTriggerModuleExtras,
): Promise<AdminServicesApp> {
  const t = await startWebhookApp(() => undefined, { options, extras, providers: [WeatherBot], onlyProviders: true, dbFile });
  return {
    t,
    triggers: t.app.get(AdminTriggers),
    keys: t.app.get(AdminTriggerKeys),
    history: t.app.get(AdminRunHistory),
    callbacks: t.app.get(AdminCallbacks),
    credits: t.app.get(AdminCredits),
    triggerRows: t.app.get(TriggerRepository),
    invocationRows: t.app.get(InvocationRepository),
  };
}
