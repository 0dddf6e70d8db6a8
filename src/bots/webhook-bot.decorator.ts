import { Injectable, SetMetadata, applyDecorators } from '@nestjs/common';
import type { WebhookBotOptions } from './bot.types.js';

/** Metadata key set by `@WebhookBot()`. */
export const WEBHOOK_BOT_METADATA = 'webhook-trigger:bot';

/** Marks a provider class (which must extend `WebhookBotHost`) as a bot that webhook triggers can start. */
export function WebhookBot(options: WebhookBotOptions): ClassDecorator {
  return applyDecorators(Injectable(), SetMetadata(WEBHOOK_BOT_METADATA, options));
}
