import { WebhookBot, WebhookBotHost, type BotContext, type BotInputs, type BotOutput } from '../../src/index.js';

/** The account that owns the demo bots; seeded with credits on first start. */
export const DEMO_ACCOUNT = 'demo';

/** One output per input property: title = property name, message = the string, or the value's JSON. */
@WebhookBot({ id: 'echo', name: 'Echo', accountId: DEMO_ACCOUNT, credits: 1 })
export class EchoBot extends WebhookBotHost {
  async main(inputs: BotInputs): Promise<BotOutput[]> {
    return Object.entries(inputs).map(([title, value]) => ({
      title,
      message: typeof value === 'string' ? value : JSON.stringify(value),
    }));
  }
}

/** Waits `inputs.ms` milliseconds (default 1000), rejecting early when the run's signal fires. */
async function sleepFor(inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
  const ms = typeof inputs.ms === 'number' && Number.isFinite(inputs.ms) && inputs.ms >= 0 ? Math.min(inputs.ms, 2_147_483_647) : 1000;
  await new Promise<void>((resolve, reject) => {
    if (ctx.signal.aborted) return reject(ctx.signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(ctx.signal.reason);
    };
    const timer = setTimeout(() => {
      ctx.signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
  });
  return [{ title: 'slept', message: String(ms) }];
}

/** Waits `inputs.ms` milliseconds (default 1000), stopping early when the run is aborted. */
@WebhookBot({ id: 'slow', name: 'Slow', accountId: DEMO_ACCOUNT, credits: 1 })
export class SlowBot extends WebhookBotHost {
  async main(inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    return sleepFor(inputs, ctx);
  }
}

/**
 * Like `slow`, but safe to repeat, so it opts in to `retryInterrupted`: a run whose process died is run
 * again by the next process (at-least-once) instead of being stored `failed` ("interrupted").
 */
@WebhookBot({ id: 'slow-retry', name: 'Slow (retried when interrupted)', accountId: DEMO_ACCOUNT, credits: 1, retryInterrupted: true })
export class SlowRetryBot extends WebhookBotHost {
  async main(inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    return sleepFor(inputs, ctx);
  }
}

/** Always fails, with `inputs.message` as the error message when given. */
@WebhookBot({ id: 'fail', name: 'Fail', accountId: DEMO_ACCOUNT, credits: 1 })
export class FailBot extends WebhookBotHost {
  async main(inputs: BotInputs): Promise<BotOutput[]> {
    const { message } = inputs;
    throw new Error(
      message === undefined || message === null ? 'bot failed' : typeof message === 'string' ? message : JSON.stringify(message),
    );
  }
}

/** A whole number input within bounds, or the default. */
function count(value: unknown, fallback: number, max: number): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? Math.min(value, max) : fallback;
}

/**
 * Emits `inputs.n` outputs (default 3) `{ title: "step i", message: "i" }`, `inputs.ms` apart (default
 * 200), while it runs (`ctx.emit`: watch them on the run's event stream), then returns `[]`. Stops at its signal.
 */
@WebhookBot({ id: 'stream', name: 'Stream', accountId: DEMO_ACCOUNT, credits: 1 })
export class StreamBot extends WebhookBotHost {
  async main(inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    const n = count(inputs.n, 3, 1000);
    const ms = count(inputs.ms, 200, 60_000);
    for (let i = 1; i <= n; i++) {
      await sleepFor({ ms }, ctx);
      await ctx.emit({ title: `step ${i}`, message: String(i) });
    }
    return [];
  }
}

export const SAMPLE_BOTS = [EchoBot, SlowBot, FailBot, SlowRetryBot, StreamBot];
