import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import { ClusterBus } from '../cluster/cluster-bus.js';
import { TRIGGERS_MOVED_ACCOUNT } from '../errors/webhook-trigger.messages.js';
import { LOG_CONTEXT } from '../options/module.constants.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';

/**
 * Keeps each trigger's account the one its bot has now (`@WebhookBot({ accountId })`, else `defaultAccountId`):
 * a trigger stores its bot's account when it is created, and the account pays for its runs and counts its
 * per-account limits. When a bot's account changed since (a bot given an account, `defaultAccountId` set), its
 * triggers move with it at startup, before the app serves, and every node drops its copy of them.
 *
 * Why an announcement lost here is not sent again at a later start (that start moves nothing, so says nothing): no
 * node is left with the old account. The bus connects before this runs (a Redis down at startup fails the boot
 * before anything moves); a node whose subscriber lost Redis drops its whole copy and keeps none until it hears
 * again; a node that runs this code moves (or finds moved) its triggers before it serves, so it never kept one from
 * before the move; and any other copy (a node still on the code before, during a rolling deploy) is read again
 * `triggerCacheTtlMs` after it was read at most, the bound for every missed announcement.
 */
@Injectable()
export class TriggerAccounts implements OnApplicationBootstrap {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly registry: WebhookBotRegistry,
    private readonly triggers: TriggerRepository,
    private readonly bus: ClusterBus,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    for (const bot of this.registry.list()) {
      const moved = await this.triggers.assignBotAccount(bot.id, bot.accountId);
      if (moved.length === 0) continue;
      for (const id of moved) await this.bus.announceTriggerChanged(id);
      this.logger.log(TRIGGERS_MOVED_ACCOUNT(bot.id, bot.accountId, moved.length));
    }
  }
}
