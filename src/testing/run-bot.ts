import { Logger, type ModuleMetadata, type Provider, type Type } from '@nestjs/common';
import type { BotInputs, BotOutput } from '../bots/bot.types.js';
import type { WebhookBotHost } from '../bots/webhook-bot-host.js';
import { WEBHOOK_BOT_METADATA } from '../bots/webhook-bot.decorator.js';
import type { WebhookBotOptions } from '../bots/bot.types.js';
import { INVALID_OUTPUTS } from '../errors/webhook-trigger.messages.js';
import { cleanOutputs, isValidOutput, isValidOutputs } from '../runs/run-outputs.js';
import { untilAborted } from '../runs/until-aborted.js';
import { compileTestingModule } from './nest-testing.js';
import { Clock, SYSTEM_CLOCK } from '../time/clock.js';

/** What `runBot` gives `main()` besides the inputs, all optional. */
export interface RunBotOptions {
  /** What the bot injects (real providers or your fakes). */
  providers?: Provider[];
  /** Your modules whose exported providers the bot injects (`MailModule`). */
  imports?: ModuleMetadata['imports'];
  /**
   * The run's signal: abort it to see how the bot stops. As a run does, runBot ends once it fires (also when it
   * fired before `main()` was called, or `main()` ignores it): `failed` with its reason's message.
   * @default a signal that never fires
   */
  signal?: AbortSignal;
  /** Called for each `ctx.emit(output)`; its answer is what `emit` resolves to. @default keeps it, answers true */
  emit?: (output: BotOutput) => boolean | Promise<boolean>;
  invocationId?: string;
  triggerId?: string;
  accountId?: string;
  /** The `Clock` a bot injects (as the module provides it): a `TestClock` you move. @default the real time */
  clock?: Clock;
}

/** How `main()` ended, judged as the module judges a run (without storing anything). */
export interface RunBotResult {
  /**
   * `succeeded`, or `failed` when it threw, returned something that is not a list of `{ title, message }`, or its
   * signal fired (`error.code` says which it was).
   */
  status: 'succeeded' | 'failed';
  /** The returned outputs (only `title` and `message` kept), empty when it failed. */
  outputs: BotOutput[];
  /** What it passed to `ctx.emit`, in order (valid ones; an invalid one fails the run). */
  emitted: BotOutput[];
  /**
   * What it threw (`message` only), why its outputs were refused (`code: 'invalid_outputs'`), or the reason its
   * signal fired with (`code: 'aborted'`: the stop came from the signal, whatever the bot did about it).
   */
  error: { message: string; code?: 'aborted' | 'invalid_outputs' } | null;
}

/**
 * Calls one bot's `main()` once, for a unit test of the bot alone: the bot is built by Nest with the providers
 * you give, and gets a context like the module's (its signal, a logger, `emit`). No module, no storage.
 */
export async function runBot(bot: Type<WebhookBotHost>, inputs: BotInputs = {}, options: RunBotOptions = {}): Promise<RunBotResult> {
  const declared = Reflect.getMetadata(WEBHOOK_BOT_METADATA, bot) as WebhookBotOptions | undefined;
  if (!declared) throw new Error(`${bot.name} is not decorated with @WebhookBot()`);
  const given = [bot, ...(options.providers ?? [])];
  const moduleRef = await compileTestingModule(
    { imports: options.imports, providers: [{ provide: Clock, useValue: options.clock ?? SYSTEM_CLOCK }, ...given] },
    given,
    'runBot()',
  );
  const emitted: BotOutput[] = [];
  const signal = options.signal ?? new AbortController().signal;
  const stopped = (): RunBotResult => ({
    status: 'failed',
    outputs: [],
    emitted,
    error: { message: messageOf(signal.reason), code: 'aborted' },
  });
  let badEmit = false;
  try {
    const instance = moduleRef.get(bot);
    const invocationId = options.invocationId ?? 'inv_testtesttesttesttest00';
    const returned: unknown = await untilAborted(signal, () =>
      instance.main(inputs, {
        invocationId,
        triggerId: options.triggerId ?? 'trg_testtesttesttest',
        botId: declared.id,
        accountId: options.accountId ?? declared.accountId ?? 'default',
        signal,
        logger: new Logger(`WebhookBot:${declared.id}:${invocationId}`),
        emit: async (output) => {
          if (signal.aborted) return false;
          if (!isValidOutput(output)) {
            badEmit = true;
            return false;
          }
          const kept = options.emit ? await options.emit(output) : true;
          if (kept) emitted.push(...cleanOutputs([output]));
          return kept;
        },
      }),
    );
    if (signal.aborted) return stopped();
    if (badEmit || !isValidOutputs(returned)) {
      return { status: 'failed', outputs: [], emitted, error: { message: INVALID_OUTPUTS, code: 'invalid_outputs' } };
    }
    return { status: 'succeeded', outputs: cleanOutputs(returned), emitted, error: null };
  } catch (thrown: unknown) {
    // A bot that rejects because its signal fired ends the way the signal says, as a run does.
    if (signal.aborted) return stopped();
    return { status: 'failed', outputs: [], emitted, error: { message: messageOf(thrown) } };
  } finally {
    await moduleRef.close();
  }
}

function messageOf(thrown: unknown): string {
  return thrown instanceof Error ? thrown.message : String(thrown);
}
