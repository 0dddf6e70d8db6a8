import { Inject, Injectable, Optional } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import type { BotOutput } from '../bots/bot.types.js';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { ACCOUNT_ID_PATTERN, INVOCATION_ID_PATTERN, newTriggerId, PLAIN_TEXT_200, TRIGGER_ID_PATTERN } from '../keys/ids.js';
import { generateTriggerKey, hashTriggerKey, TriggerKeyCipher } from '../keys/trigger-keys.js';
import { CreditAccounts } from '../persistence/credit-accounts.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import type { InvocationError, InvocationRecord, InvocationStatus, TriggerRecord } from '../persistence/records.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import { WEBHOOKS_PATH } from '../http/webhook-routes.js';
import { WebhookAdminInputError } from '../errors/webhook-trigger.errors.js';
import {
  BAD_ACCOUNT_ID,
  BAD_CREDITS,
  BAD_TRIGGER_NAME,
  TRIGGER_TYPE_UNSUPPORTED,
  UNKNOWN_BOT,
} from '../errors/webhook-trigger.messages.js';

/** Longest outputs (characters of JSON) a history list carries per run. */
export const LISTED_OUTPUTS_MAX = 8 * 1024;

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
  /** True in history lists when the outputs were too long to list (`outputs` is then null; see `getInvocation`). */
  outputsTruncated: boolean;
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
    @Optional() private readonly appConfig?: ApplicationConfig,
  ) {
    this.cipher = options.keySecret ? new TriggerKeyCipher(options.keySecret) : null;
  }

  listBots(): BotView[] {
    return this.registry.list().map(({ id, name, accountId, credits }) => ({ id, name, accountId, credits }));
  }

  /** Creates a trigger for a bot; the answer is the only time a key is shown when there is no `keySecret`. */
  async createTrigger(botId: string, input: CreateTriggerInput): Promise<TriggerWithKey> {
    const bot = this.registry.get(botId);
    if (!bot) throw new WebhookAdminInputError(UNKNOWN_BOT(String(botId).slice(0, 200)));
    const type = input?.type ?? 'webhook';
    if (type !== 'webhook') throw new WebhookAdminInputError(TRIGGER_TYPE_UNSUPPORTED(String(type).slice(0, 200)));
    const name = typeof input?.name === 'string' ? input.name.trim() : '';
    if (!PLAIN_TEXT_200.test(name)) throw new WebhookAdminInputError(BAD_TRIGGER_NAME);
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

  /** A registered bot's triggers, oldest first ([] for a bot this app does not have). */
  async listTriggers(botId: string): Promise<TriggerView[]> {
    if (!this.registry.get(botId)) return [];
    return (await this.triggers.listByBot(botId)).map((t) => this.toView(t));
  }

  /** The trigger with its key (decrypted with `keySecret`), or null when unknown or deleted. */
  async viewTrigger(triggerId: string): Promise<TriggerWithKey | null> {
    const trigger = TRIGGER_ID_PATTERN.test(triggerId) ? await this.triggers.findActive(triggerId) : null;
    if (!trigger) return null;
    const key = trigger.keyCiphertext && this.cipher ? this.cipher.decrypt(trigger.keyCiphertext) : null;
    return { ...this.toView(trigger), key };
  }

  /** Issues a new key; the old one stops working at once. Null when the trigger is unknown or deleted. */
  async rotateKey(triggerId: string): Promise<TriggerWithKey | null> {
    if (!TRIGGER_ID_PATTERN.test(triggerId)) return null;
    const key = generateTriggerKey();
    if (!(await this.triggers.replaceKey(triggerId, hashTriggerKey(key), this.cipher?.encrypt(key) ?? null))) return null;
    const trigger = await this.triggers.findActive(triggerId);
    return trigger ? { ...this.toView(trigger), key } : null;
  }

  /** Deletes a trigger: its URL answers 404 from now on; its runs stay in history. False when unknown. */
  async deleteTrigger(triggerId: string): Promise<boolean> {
    return TRIGGER_ID_PATTERN.test(triggerId) ? this.triggers.delete(triggerId) : false;
  }

  /**
   * A bot's runs, newest first ([] for a bot this app does not have). Outputs longer than
   * `LISTED_OUTPUTS_MAX` characters of JSON are left out (`outputs: null`, `outputsTruncated: true`):
   * `getInvocation` gives them whole.
   */
  async listInvocations(botId: string, limit = 100): Promise<InvocationView[]> {
    if (!this.registry.get(botId)) return [];
    const rows = await this.invocations.listByBot(botId, {
      limit: Math.min(Math.max(1, Math.trunc(limit) || 1), 1000),
      outputsUpTo: LISTED_OUTPUTS_MAX,
    });
    return rows.map((row) => this.toInvocationView(row));
  }

  /** One run, whole (outputs included however long), or null when unknown. */
  async getInvocation(invocationId: string): Promise<InvocationView | null> {
    const row = INVOCATION_ID_PATTERN.test(invocationId) ? await this.invocations.findById(invocationId) : null;
    return row ? this.toInvocationView(row) : null;
  }

  /** The account's balance, or null when unknown (or not a possible account id). */
  async getCredits(accountId: string): Promise<{ id: string; credits: number } | null> {
    if (!ACCOUNT_ID_PATTERN.test(accountId)) return null;
    const credits = await this.accounts.getBalance(accountId);
    return credits === null ? null : { id: accountId, credits };
  }

  async setCredits(accountId: string, credits: number): Promise<{ id: string; credits: number }> {
    if (typeof accountId !== 'string' || !ACCOUNT_ID_PATTERN.test(accountId)) throw new WebhookAdminInputError(BAD_ACCOUNT_ID);
    if (!Number.isSafeInteger(credits) || credits < 0) throw new WebhookAdminInputError(BAD_CREDITS);
    await this.accounts.setBalance(accountId, credits);
    return { id: accountId, credits };
  }

  /** `{publicBaseUrl}/{global prefix}/webhooks/{id}/trigger`: the URL a caller uses, with the host's `setGlobalPrefix()`. */
  triggerUrl(triggerId: string): string {
    const prefix = this.appConfig?.getGlobalPrefix().replace(/^\/+|\/+$/g, '');
    return `${this.options.publicBaseUrl}${prefix ? `/${prefix}` : ''}/${WEBHOOKS_PATH}/${triggerId}/trigger`;
  }

  private toView(t: TriggerRecord): TriggerView {
    return {
      id: t.id,
      name: t.name,
      type: t.type,
      botId: t.botId,
      accountId: t.accountId,
      url: this.triggerUrl(t.id),
      createdAt: t.createdAt,
    };
  }

  private toInvocationView(row: InvocationRecord): InvocationView {
    const { id, triggerId, botId, status, credits, createdAt, startedAt, finishedAt, outputs, error } = row;
    return {
      id,
      triggerId,
      botId,
      status,
      credits,
      createdAt,
      startedAt,
      finishedAt,
      durationMs: startedAt && finishedAt ? finishedAt.getTime() - startedAt.getTime() : null,
      outputs,
      outputsTruncated: row.outputsTruncated === true,
      error,
    };
  }
}
