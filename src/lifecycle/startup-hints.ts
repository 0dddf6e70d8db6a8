import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DECLARED_BOTS } from '../bots/webhook-bot.decorator.js';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import { ACCOUNT_NEVER_OPENED, BOT_NOT_PROVIDED, FIRST_TRIGGER, NO_BOTS } from '../errors/webhook-trigger.messages.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { CreditAccounts } from '../persistence/credit-accounts.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';
import { AdminScreensPaths } from './admin-screens-paths.js';

/**
 * What a new user needs to hear at startup, once: a `@WebhookBot` class that no module provides (it would
 * never run), an app with no bots at all, and, on a node that serves the API, an account of a bot that was
 * never opened (every trigger would answer 402) and, while no trigger exists yet, how to make the first one.
 */
@Injectable()
export class StartupHints implements OnApplicationBootstrap {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly registry: WebhookBotRegistry,
    private readonly triggers: TriggerRepository,
    private readonly accounts: CreditAccounts,
    private readonly adminScreens: AdminScreensPaths,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const bots = this.registry.list();
    for (const [botId, className] of DECLARED_BOTS) if (!this.registry.get(botId)) this.logger.warn(BOT_NOT_PROVIDED(className, botId));
    if (bots.length === 0) return this.logger.warn(NO_BOTS);
    if (this.options.role === 'worker') return;
    await this.warnOfUnopenedAccounts();
    const ids = bots.map((b) => b.id);
    const counts = await Promise.all(ids.map((id) => this.triggers.listByBot(id).then((list) => list.length))).catch(() => null);
    if (counts && counts.every((n) => n === 0)) this.logger.log(FIRST_TRIGGER(ids, this.settingsPath(ids[0])));
  }

  /**
   * Accounts of bots that neither the `accounts` option opens (OpenAccounts does, at this same moment) nor
   * the database holds.
   */
  private async warnOfUnopenedAccounts(): Promise<void> {
    const botsOf = new Map<string, string[]>();
    for (const bot of this.registry.list()) {
      if (Object.hasOwn(this.options.accounts, bot.accountId)) continue;
      botsOf.set(bot.accountId, [...(botsOf.get(bot.accountId) ?? []), bot.id]);
    }
    for (const [accountId, botIds] of botsOf) {
      const balance = await this.accounts.getBalance(accountId).catch(() => undefined);
      if (balance === null) this.logger.warn(ACCOUNT_NEVER_OPENED(accountId, botIds));
    }
  }

  /** The bot's Settings in the admin screens (`/<prefix>/<path>#/bots/<id>/settings`), when they are mounted. */
  private settingsPath(botId: string): string | undefined {
    const served = this.adminScreens.first();
    return served === undefined ? undefined : `${served}#/bots/${encodeURIComponent(botId)}/settings`;
  }
}
