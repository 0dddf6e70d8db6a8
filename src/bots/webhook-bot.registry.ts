import { Injectable } from '@nestjs/common';
import type { WebhookBotHost } from './webhook-bot-host.js';

/** A discovered bot with its options resolved. */
export interface RegisteredBot {
  id: string;
  name: string;
  credits: number;
  accountId: string;
  timeoutMs: number;
  retryInterrupted: boolean;
  instance: WebhookBotHost;
}

/** The bots of this application, filled once by the explorer at module init. */
@Injectable()
export class WebhookBotRegistry {
  private readonly bots = new Map<string, RegisteredBot>();

  add(bot: RegisteredBot): void {
    this.bots.set(bot.id, bot);
  }

  get(id: string): RegisteredBot | undefined {
    return this.bots.get(id);
  }

  list(): RegisteredBot[] {
    return [...this.bots.values()];
  }
}
