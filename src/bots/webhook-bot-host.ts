import type { BotContext, BotInputs, BotOutput } from './bot.types.js';

/**
 * Base class of every bot. Extend it, implement `main()`, decorate the class with `@WebhookBot()` and
 * register it as a provider; the module finds it at startup.
 */
export abstract class WebhookBotHost {
  /** Runs the bot. Resolve with its outputs; throw to fail the run (the message is shown to the caller). */
  abstract main(inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]>;
}
