import type { LoggerService } from '@nestjs/common';

/** The JSON object POSTed to the trigger: any properties, defined by the bot. */
export type BotInputs = Record<string, unknown>;

/** One element of the sync response's `outputs`. */
export interface BotOutput {
  title: string;
  message: string;
}

/** What a bot's `main()` gets besides its inputs. */
export interface BotContext {
  invocationId: string;
  triggerId: string;
  botId: string;
  accountId: string;
  /** Fires when the run must stop (e.g. the process shuts down); pass it on to I/O. */
  signal: AbortSignal;
  /** A logger whose context names the bot and the invocation. Never log trigger keys. */
  logger: LoggerService;
}

/** Options of `@WebhookBot()`. */
export interface WebhookBotOptions {
  /** Stable id, unique in the app; triggers and history refer to it. Letters, digits, `.`, `_`, `-`. */
  id: string;
  /** Display name. @default the id */
  name?: string;
  /** Credits charged to the owning account per accepted run (0 allowed). @default 1 */
  credits?: number;
  /** Account that owns the bot and pays for its runs. @default the module's `defaultAccountId` */
  accountId?: string;
}
