import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DECLARED_BOTS } from '../bots/webhook-bot.decorator.js';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import { BOT_NOT_PROVIDED, FIRST_TRIGGER, NO_BOTS } from '../errors/webhook-trigger.messages.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';

/**
 * What a new user needs to hear at startup, once: a `@WebhookBot` class that no module provides (it would
 * never run), an app with no bots at all, and, on a node that serves the API while no trigger exists yet,
 * how to make the first one.
 */
@Injectable()
export class StartupHints implements OnApplicationBootstrap {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly registry: WebhookBotRegistry,
    private readonly triggers: TriggerRepository,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const bots = this.registry.list().map((b) => b.id);
    for (const [botId, className] of DECLARED_BOTS) if (!this.registry.get(botId)) this.logger.warn(BOT_NOT_PROVIDED(className, botId));
    if (bots.length === 0) return this.logger.warn(NO_BOTS);
    if (this.options.role === 'worker') return;
    const counts = await Promise.all(bots.map((id) => this.triggers.listByBot(id).then((list) => list.length))).catch(() => null);
    if (counts && counts.every((n) => n === 0)) this.logger.log(FIRST_TRIGGER(bots));
  }
}
