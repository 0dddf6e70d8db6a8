import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { RESOLVED_OPTIONS, WEBHOOK_BOT_METADATA } from '../webhook-trigger.constants.js';
import { BOT_NOT_EXTENDING_BASE, DUPLICATE_BOT_ID, INVALID_OPTION } from '../errors/webhook-trigger.messages.js';
import type { WebhookBotOptions } from './bot.types.js';
import { WebhookBotHost } from './webhook-bot-host.js';
import { WebhookBotRegistry } from './webhook-bot.registry.js';

const BOT_ID = /^[A-Za-z0-9._-]{1,200}$/;

/** Finds `@WebhookBot()` providers at startup and rejects bad declarations before the app serves. */
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
    for (const wrapper of this.discovery.getProviders()) {
      const { metatype, instance } = wrapper;
      if (!metatype || typeof metatype !== 'function' || !instance) continue;
      const meta = this.reflector.get<WebhookBotOptions | undefined>(WEBHOOK_BOT_METADATA, metatype);
      if (!meta) continue;
      const className = metatype.name;
      if (!(instance instanceof WebhookBotHost)) throw new Error(BOT_NOT_EXTENDING_BASE(className));
      if (typeof meta.id !== 'string' || !BOT_ID.test(meta.id)) {
        throw new Error(INVALID_OPTION(`@WebhookBot(${className}).id`, 'use 1–200 letters, digits, ".", "_" or "-"'));
      }
      const credits = meta.credits ?? 1;
      if (!Number.isInteger(credits) || credits < 0) {
        throw new Error(INVALID_OPTION(`@WebhookBot(${className}).credits`, 'expected a whole number ≥ 0'));
      }
      const timeoutMs = meta.timeoutMs ?? this.options.botTimeoutMs;
      if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2_147_483_647) {
        throw new Error(INVALID_OPTION(`@WebhookBot(${className}).timeoutMs`, 'expected a whole number of milliseconds ≥ 1'));
      }
      const previous = owners.get(meta.id);
      if (previous) throw new Error(DUPLICATE_BOT_ID(meta.id, previous, className));
      owners.set(meta.id, className);
      this.registry.add({
        id: meta.id,
        name: meta.name ?? meta.id,
        credits,
        accountId: meta.accountId ?? this.options.defaultAccountId,
        timeoutMs,
        retryInterrupted: meta.retryInterrupted === true,
        instance,
      });
    }
  }
}
