import { Inject, Injectable } from '@nestjs/common';
import { WebhookBotRegistry } from '../../bots/webhook-bot.registry.js';
import { ClusterBus } from '../../cluster/cluster-bus.js';
import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { ADMIN_BEFORE_INIT, BAD_TRIGGER_NAME, TRIGGER_TYPE_UNSUPPORTED, UNKNOWN_BOT } from '../../errors/webhook-trigger.messages.js';
import { newTriggerId, PLAIN_TEXT_200, TRIGGER_ID_PATTERN } from '../../keys/ids.js';
import { CallbackStore } from '../../persistence/callback-store.js';
import { CreditAccounts } from '../../persistence/credit-accounts.js';
import { InvocationRepository } from '../../persistence/invocation.repository.js';
import type { TriggerRecord } from '../../persistence/records.js';
import { TriggerRepository } from '../../persistence/trigger.repository.js';
import { Clock } from '../../time/clock.js';
import {
  type BotSummary,
  type BotView,
  type CreateTriggerInput,
  RECENT_RUNS_CAP,
  type TriggerListItem,
  type TriggerView,
  type TriggerWithKey,
  type TriggerWithNewKey,
} from '../admin-views.js';
import { AdminTriggerKeys } from './admin-trigger-keys.js';
import { AdminAudit } from '../audit/admin-audit.js';
import { TriggerUrls } from './trigger-urls.js';

/** The admin's bots and their triggers: create, list, view, delete (their keys: `AdminTriggerKeys`). Behind `WebhookTriggersAdmin`. */
@Injectable()
export class AdminTriggers {
  constructor(
    private readonly registry: WebhookBotRegistry,
    private readonly triggers: TriggerRepository,
    private readonly invocations: InvocationRepository,
    private readonly accounts: CreditAccounts,
    private readonly callbacks: CallbackStore,
    private readonly bus: ClusterBus,
    private readonly urls: TriggerUrls,
    private readonly keys: AdminTriggerKeys,
    private readonly audit: AdminAudit,
    @Inject(Clock) private readonly clock: Clock,
  ) {}

  listBots(): BotView[] {
    return this.registry.list().map(({ id, name, accountId, credits }) => ({ id, name, accountId, credits }));
  }

  /** True when this app has a bot of that id. */
  hasBot(botId: string): boolean {
    return this.registry.get(botId) !== undefined;
  }

  async listBotSummaries(): Promise<BotSummary[]> {
    return Promise.all(this.listBots().map((bot) => this.summarize(bot)));
  }

  async getBotSummary(botId: string): Promise<BotSummary | null> {
    const bot = this.listBots().find((b) => b.id === botId);
    return bot ? this.summarize(bot) : null;
  }

  private async summarize(bot: BotView): Promise<BotSummary> {
    const since = new Date(this.clock.now() - 24 * 60 * 60 * 1000);
    const [accountCredits, triggers, runsLast24h] = await Promise.all([
      this.accounts.getBalance(bot.accountId),
      this.triggers.listByBot(bot.id),
      this.invocations.countByBotSince(bot.id, since, RECENT_RUNS_CAP),
    ]);
    return { ...bot, accountCredits, triggers: triggers.length, runsLast24h };
  }

  async createTrigger(botId: string, input: CreateTriggerInput, origin?: string): Promise<TriggerWithNewKey> {
    const bot = this.registry.get(botId);
    if (!bot && !this.registry.explored) throw new WebhookAdminInputError(ADMIN_BEFORE_INIT('createTrigger'));
    if (!bot) throw new WebhookAdminInputError(UNKNOWN_BOT(String(botId).slice(0, 200)));
    const type = input?.type ?? 'webhook';
    if (type !== 'webhook') throw new WebhookAdminInputError(TRIGGER_TYPE_UNSUPPORTED(String(type).slice(0, 200)));
    const name = typeof input?.name === 'string' ? input.name.trim() : '';
    if (!PLAIN_TEXT_200.test(name)) throw new WebhookAdminInputError(BAD_TRIGGER_NAME);
    const id = newTriggerId();
    const { record: first, key } = this.keys.newKey(id, 'Key 1');
    const record: TriggerRecord = {
      id,
      botId,
      accountId: bot.accountId,
      name,
      type: 'webhook',
      keys: [first],
      createdAt: new Date(this.clock.now()),
    };
    await this.triggers.create(record);
    // Trigger caches keep no misses, so nothing needs it yet; said anyway, so every trigger write is heard.
    await this.bus.announceTriggerChanged(record.id);
    await this.audit.triggerCreated(record);
    return { ...this.view(record, origin), key };
  }

  async listTriggers(botId: string, origin?: string): Promise<TriggerListItem[]> {
    if (!this.hasBot(botId)) return [];
    const triggers = await this.triggers.listByBot(botId);
    const lastUsed = await this.invocations.lastUsedAt(triggers.map((t) => t.id));
    return triggers.map((t) => ({ ...this.view(t, origin), lastUsedAt: lastUsed.get(t.id) ?? null }));
  }

  async viewTrigger(triggerId: string, origin?: string): Promise<TriggerWithKey | null> {
    const trigger = TRIGGER_ID_PATTERN.test(triggerId) ? await this.triggers.findActive(triggerId) : null;
    if (!trigger) return null;
    const key = this.keys.shownKey(trigger);
    if (key !== null) await this.audit.keyViewed(trigger.id);
    return { ...this.view(trigger, origin), key };
  }

  async deleteTrigger(triggerId: string): Promise<boolean> {
    if (!TRIGGER_ID_PATTERN.test(triggerId) || !(await this.triggers.delete(triggerId))) return false;
    // Its callback goes with it: deliveries still pending are not sent.
    await this.callbacks.deleteCallback(triggerId);
    await this.bus.announceTriggerChanged(triggerId);
    await this.audit.triggerDeleted(triggerId);
    return true;
  }

  /** The one place a trigger record becomes a view. */
  view(t: TriggerRecord, origin: string | undefined): TriggerView {
    return {
      id: t.id,
      name: t.name,
      type: t.type,
      botId: t.botId,
      accountId: t.accountId,
      url: this.urls.triggerUrl(t.id, origin),
      createdAt: t.createdAt,
      allowedIps: t.allowedIps ?? [],
    };
  }
}
