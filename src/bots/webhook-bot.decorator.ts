import { Injectable, SetMetadata, applyDecorators } from '@nestjs/common';
import type { WebhookBotOptions } from './bot.types.js';
import type { WebhookBotHost } from './webhook-bot-host.js';

/** Metadata key set by `@WebhookBot()`. */
export const WEBHOOK_BOT_METADATA = 'webhook-trigger:bot';

/**
 * Every class decorated with `@WebhookBot()` in this process, with its bot id: how startup names a bot
 * class that no module provides (it would otherwise never run, silently).
 */
export const DECLARED_BOTS = new Map<string, string>();

/**
 * A class `@WebhookBot()` takes: one whose instances have the `main()` the runner calls (a class without it does
 * not compile; startup still refuses one that has it without extending `WebhookBotHost`).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any constructor arguments, as Nest's own Type<T>
export type WebhookBotClass = abstract new (...args: any[]) => WebhookBotHost;

/** Marks a provider class (which must extend `WebhookBotHost`) as a bot that webhook triggers can start. */
export function WebhookBot(options: WebhookBotOptions): <T extends WebhookBotClass>(target: T) => void {
  const decorate = applyDecorators(Injectable(), SetMetadata(WEBHOOK_BOT_METADATA, options));
  return (target) => {
    if (typeof options?.id === 'string' && !DECLARED_BOTS.has(options.id)) DECLARED_BOTS.set(options.id, target.name);
    decorate(target);
  };
}
