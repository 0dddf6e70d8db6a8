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
  private accounts = 0;
  private filled = false;

  /** Said by the explorer once it has looked at every provider: from then on an unknown id is really unknown. */
  markExplored(): void {
    this.filled = true;
  }

  /** False until module init found the bots (code that calls the admin before `app.init()`). */
  get explored(): boolean {
    return this.filled;
  }

  add(bot: RegisteredBot): void {
    this.bots.set(bot.id, bot);
    this.accounts = new Set(this.list().map((b) => b.accountId)).size;
  }

  /** True when the bots belong to more than one account: tenants who share the app's bounds. */
  get manyAccounts(): boolean {
    return this.accounts > 1;
  }

  get(id: string): RegisteredBot | undefined {
    return this.bots.get(id);
  }

  list(): RegisteredBot[] {
    return [...this.bots.values()];
  }
}
