import { Inject, Injectable } from '@nestjs/common';
import type { BotOutput } from '../bots/bot.types.js';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { newTriggerId } from '../keys/ids.js';
import { generateTriggerKey, hashTriggerKey, TriggerKeyCipher } from '../keys/trigger-keys.js';
import { CreditAccounts } from '../persistence/credit-accounts.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import type { InvocationError, InvocationStatus, TriggerRecord } from '../persistence/records.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import { WEBHOOKS_PATH } from '../http/webhook-routes.js';
import { WebhookAdminInputError } from '../errors/webhook-trigger.errors.js';
import { BAD_CREDITS, BAD_TRIGGER_NAME, TRIGGER_TYPE_UNSUPPORTED, UNKNOWN_BOT } from '../errors/webhook-trigger.messages.js';

export interface BotView {
  id: string;
  name: string;
  accountId: string;
  credits: number;
}

export interface TriggerView {
  id: string;
  name: string;
  type: 'webhook';
  botId: string;
  accountId: string;
  url: string;
  createdAt: Date;
}

export interface TriggerWithKey extends TriggerView {
  /** The key; null when the module has no `keySecret` and so cannot show it again. */
  key: string | null;
}

export interface InvocationView {
  id: string;
  triggerId: string;
  botId: string;
  status: InvocationStatus;
  credits: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** From start to finish; null until the run finished (and for a run cancelled before it started). */
  durationMs: number | null;
  outputs: BotOutput[] | null;
  error: InvocationError | null;
}

export interface CreateTriggerInput {
  name: string;
  /** Only `webhook` exists. @default 'webhook' */
  type?: string;
}


/**
 * What a host needs to build its own trigger UI: create, list, view, rotate and delete triggers, read
 * run history and manage credits. The module mounts no HTTP API for this; expose it as you see fit.
 */
@Injectable()
export class WebhookTriggersAdmin {
  private readonly cipher: TriggerKeyCipher | null;

  constructor(
    private readonly registry: WebhookBotRegistry,
    private readonly triggers: TriggerRepository,
    private readonly invocations: InvocationRepository,
    private readonly accounts: CreditAccounts,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {
    this.cipher = options.keySecret ? new TriggerKeyCipher(options.keySecret) : null;
  }

  listBots(): BotView[] {
    return this.registry.list().map(({ id, name, accountId, credits }) => ({ id, name, accountId, credits }));
  }

  /** Creates a trigger for a bot; the answer is the only time a key is shown when there is no `keySecret`. */
  async createTrigger(botId: string, input: CreateTriggerInput): Promise<TriggerWithKey> {
    const bot = this.registry.get(botId);
    if (!bot) throw new WebhookAdminInputError(UNKNOWN_BOT(botId));
    const type = input.type ?? 'webhook';
    if (type !== 'webhook') throw new WebhookAdminInputError(TRIGGER_TYPE_UNSUPPORTED(String(type)));
    const name = typeof input.name === 'string' ? input.name.trim() : '';
    if (name.length < 1 || name.length > 200) throw new WebhookAdminInputError(BAD_TRIGGER_NAME);
    const key = generateTriggerKey();
    const record: TriggerRecord = {
      id: newTriggerId(),
      botId,
      accountId: bot.accountId,
      name,
      type: 'webhook',
      keyHash: hashTriggerKey(key),
      keyCiphertext: this.cipher?.encrypt(key) ?? null,
      createdAt: new Date(),
    };
    await this.triggers.create(record);
    return { ...this.toView(record), key };
  }

  async listTriggers(botId: string): Promise<TriggerView[]> {
    return (await this.triggers.listByBot(botId)).map((t) => this.toView(t));
  }

  /** The trigger with its key (decrypted with `keySecret`), or null when unknown or deleted. */
  async viewTrigger(triggerId: string): Promise<TriggerWithKey | null> {
    const trigger = await this.triggers.findActive(triggerId);
    if (!trigger) return null;
    const key = trigger.keyCiphertext && this.cipher ? this.cipher.decrypt(trigger.keyCiphertext) : null;
    return { ...this.toView(trigger), key };
  }

  /** Issues a new key; the old one stops working at once. Null when the trigger is unknown or deleted. */
  async rotateKey(triggerId: string): Promise<TriggerWithKey | null> {
    const key = generateTriggerKey();
    if (!(await this.triggers.replaceKey(triggerId, hashTriggerKey(key), this.cipher?.encrypt(key) ?? null))) return null;
    const trigger = await this.triggers.findActive(triggerId);
    return trigger ? { ...this.toView(trigger), key } : null;
  }

  /** Deletes a trigger: its URL answers 404 from now on; its runs stay in history. */
  deleteTrigger(triggerId: string): Promise<boolean> {
    return this.triggers.delete(triggerId);
  }

  /** A bot's runs, newest first. */
  async listInvocations(botId: string, limit = 100): Promise<InvocationView[]> {
    const rows = await this.invocations.listByBot(botId, Math.min(Math.max(1, limit), 1000));
    return rows.map(({ id, triggerId, botId: b, status, credits, createdAt, startedAt, finishedAt, outputs, error }) => ({
      id,
      triggerId,
      botId: b,
      status,
      credits,
      createdAt,
      startedAt,
      finishedAt,
      durationMs: startedAt && finishedAt ? finishedAt.getTime() - startedAt.getTime() : null,
      outputs,
      error,
    }));
  }

  async getCredits(accountId: string): Promise<{ id: string; credits: number } | null> {
    const credits = await this.accounts.getBalance(accountId);
    return credits === null ? null : { id: accountId, credits };
  }

  async setCredits(accountId: string, credits: number): Promise<{ id: string; credits: number }> {
    if (!Number.isSafeInteger(credits) || credits < 0) throw new WebhookAdminInputError(BAD_CREDITS);
    await this.accounts.setBalance(accountId, credits);
    return { id: accountId, credits };
  }

  /** `{publicBaseUrl}/webhooks/{id}/trigger`. */
  triggerUrl(triggerId: string): string {
    return `${this.options.publicBaseUrl}/${WEBHOOKS_PATH}/${triggerId}/trigger`;
  }

  private toView(t: TriggerRecord): TriggerView {
    return { id: t.id, name: t.name, type: t.type, botId: t.botId, accountId: t.accountId, url: this.triggerUrl(t.id), createdAt: t.createdAt };
  }
}
