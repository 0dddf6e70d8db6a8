import { Injectable, SetMetadata, applyDecorators } from '@nestjs/common';
import { WEBHOOK_BOT_METADATA } from '../webhook-trigger.constants.js';
import type { WebhookBotOptions } from './bot.types.js';

/** Marks a provider class (which must extend `WebhookBotHost`) as a bot that webhook triggers can start. */
export function WebhookBot(options: WebhookBotOptions): ClassDecorator {
  return applyDecorators(Injectable(), SetMetadata(WEBHOOK_BOT_METADATA, options));
}
