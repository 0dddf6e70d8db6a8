import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { CreditAccounts } from '../persistence/credit-accounts.js';

/**
 * Opens the accounts of the `accounts` option at startup, before the app serves, so a new app's first
 * trigger runs instead of answering 402. An account that exists keeps its balance (every process of a
 * deployment may do this at once: the insert is conditional).
 */
@Injectable()
export class OpenAccounts implements OnApplicationBootstrap {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly accounts: CreditAccounts,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    for (const [accountId, { credits }] of Object.entries(this.options.accounts)) {
      if (await this.accounts.openAccount(accountId, credits)) this.logger.log(`Opened account "${accountId}" with ${credits} credit(s)`);
    }
  }
}
