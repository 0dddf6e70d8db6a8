import type { BotContext, BotInputs } from '../../src/bots/bot.types.js';
import type { WebhookTriggerModuleOptions } from '../../src/options/webhook-trigger-options.interface.js';
import type { InvocationRecord, NewInvocation } from '../../src/persistence/records.js';
import { InvocationExecutor } from '../../src/runs/invocation.executor.js';
import { createWebhookFakes, type BotMain, type WebhookFakes } from './webhook-fakes.js';
import type { ChosenExtras } from '../../src/options/resolve-options.js';

/** The executor's specs' set-up: fakes, an executor of their own, bots that record their calls, queued runs. */
export interface ExecutorHarness {
  f: WebhookFakes;
  executor: InvocationExecutor;
  calls: Array<{ inputs: BotInputs; ctx: BotContext }>;
  /** Fresh fakes and executor (call in beforeEach, or again with other options, or a `clock` in the extras). */
  setUp(options?: WebhookTriggerModuleOptions, extras?: ChosenExtras): void;
  /** Registers bot `id` whose `main` records its call and then does `main`. */
  bot(main: BotMain, fields?: { id?: string; timeoutMs?: number }): void;
  /** Stores a queued run of `botId`; returns its id. */
  queued(botId?: string, inputs?: BotInputs): Promise<string>;
  row(id: string): Promise<InvocationRecord | null>;
  eventNames(): string[];
}

export function executorHarness(): ExecutorHarness {
  let n = 0;
  const h: ExecutorHarness = {
    f: undefined as unknown as WebhookFakes,
    executor: undefined as unknown as InvocationExecutor,
    calls: [],
    setUp(options = {}, extras = {}) {
      h.f = createWebhookFakes(options, extras);
      const { invocations, registry, bus, invocationEvents, outbox, finisher } = h.f;
      h.executor = new InvocationExecutor(invocations, registry, bus, invocationEvents, h.f.options, outbox, finisher, h.f.clock);
      h.calls = [];
    },
    bot(main, fields = {}) {
      h.f.addBot({
        id: fields.id ?? 'bot',
        timeoutMs: fields.timeoutMs,
        main: (inputs, ctx) => {
          h.calls.push({ inputs, ctx });
          return main(inputs, ctx);
        },
      });
    },
    async queued(botId = 'bot', inputs = { n: 1 }) {
      const invocation: NewInvocation = {
        id: `inv_${String(++n).padStart(22, '0')}`,
        triggerId: 'trg_AAAAAAAAAAAAAAAA',
        botId,
        accountId: 'acct',
        inputs,
        credits: 1,
        idempotencyKey: null,
        requestHash: null,
        createdAt: new Date(),
      };
      await h.f.invocations.insert(invocation);
      return invocation.id;
    },
    row: (id) => h.f.invocations.findById(id),
    eventNames: () => h.f.events.map((e) => e.name),
  };
  return h;
}
