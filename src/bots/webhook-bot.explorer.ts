import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import {
  BOT_CREDITS_INVALID,
  BOT_ID_INVALID,
  BOT_NOT_EXTENDING_BASE,
  BOT_TIMEOUT_INVALID,
  DUPLICATE_BOT_ID,
  INVALID_OPTION,
} from '../errors/webhook-trigger.messages.js';
import { BOT_DEFAULTS, MAX_TIMER_MS } from '../options/defaults.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import type { WebhookBotOptions } from './bot.types.js';
import { WEBHOOK_BOT_METADATA } from './webhook-bot.decorator.js';
import { WebhookBotHost } from './webhook-bot-host.js';
import { WebhookBotRegistry } from './webhook-bot.registry.js';

const BOT_ID = /^[A-Za-z0-9._-]{1,200}$/;

/**
 * Finds `@WebhookBot()` providers at startup and rejects bad declarations before the app serves. A bot
 * is recognised by its instance's class, so it is found however it is registered: as a class, with
 * `useClass`, `useFactory` or `useValue`.
 */
@Injectable()
export class WebhookBotExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
    private readonly registry: WebhookBotRegistry,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  onModuleInit(): void {
    const owners = new Map<string, string>();
    const seen = new Set<unknown>();
    for (const { instance } of this.discovery.getProviders()) {
      // A bot provided under several tokens (e.g. a class and a useExisting alias) is one bot.
      if (typeof instance !== 'object' || instance === null || seen.has(instance)) continue;
      const botClass = (instance as object).constructor;
      const meta = this.reflector.get<WebhookBotOptions | undefined>(WEBHOOK_BOT_METADATA, botClass);
      if (!meta) continue;
      seen.add(instance);
      const className = botClass.name;
      const invalid = (field: string, problem: string) =>
        new WebhookConfigurationError(INVALID_OPTION(`@WebhookBot(${className}).${field}`, problem));
      if (!(instance instanceof WebhookBotHost)) throw new WebhookConfigurationError(BOT_NOT_EXTENDING_BASE(className));
      if (typeof meta.id !== 'string' || !BOT_ID.test(meta.id)) throw invalid('id', BOT_ID_INVALID);
      const credits = meta.credits ?? BOT_DEFAULTS.credits;
      if (!Number.isInteger(credits) || credits < 0) throw invalid('credits', BOT_CREDITS_INVALID);
      const timeoutMs = meta.timeoutMs ?? this.options.botTimeoutMs;
      if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMER_MS) {
        throw invalid('timeoutMs', BOT_TIMEOUT_INVALID(MAX_TIMER_MS));
      }
      const previous = owners.get(meta.id);
      if (previous) throw new WebhookConfigurationError(DUPLICATE_BOT_ID(meta.id, previous, className));
      owners.set(meta.id, className);
      this.registry.add({
        id: meta.id,
        name: meta.name ?? meta.id,
        credits,
        accountId: meta.accountId ?? this.options.defaultAccountId,
        timeoutMs,
        retryInterrupted: meta.retryInterrupted ?? BOT_DEFAULTS.retryInterrupted,
        instance,
      });
    }
    this.registry.markExplored();
  }
}
