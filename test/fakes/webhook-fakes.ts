import { EventEmitter2 } from '@nestjs/event-emitter';
import type { BotContext, BotInputs, BotOutput } from '../../src/bots/bot.types.js';
import { WebhookBotHost } from '../../src/bots/webhook-bot-host.js';
import { WebhookBotRegistry, type RegisteredBot } from '../../src/bots/webhook-bot.registry.js';
import { InMemoryClusterBus } from '../../src/cluster/in-memory-cluster.bus.js';
import { InvocationEvents, type InvocationEvent } from '../../src/events/invocation.events.js';
import { newTriggerId } from '../../src/keys/ids.js';
import { generateTriggerKey } from '../../src/keys/trigger-keys.js';
import { triggerKeyRecord } from './trigger-keys.js';
import { ShutdownState } from '../../src/lifecycle/shutdown.state.js';
import { resolveWebhookTriggerOptions } from '../../src/options/resolve-options.js';
import type { WebhookTriggerModuleOptions } from '../../src/options/webhook-trigger-options.interface.js';
import type { ChosenExtras } from '../../src/options/resolve-options.js';
import type { TriggerRecord } from '../../src/persistence/records.js';
import { InvocationExecutor } from '../../src/runs/invocation.executor.js';
import { DispatchRetries } from '../../src/runs/dispatch-retries.js';
import { RunBacklog } from '../../src/runs/run-backlog.js';
import { InvocationService } from '../../src/invocations/invocation.service.js';
import { InMemoryWebhookStorage } from '../../src/persistence/memory/in-memory-webhook-storage.js';
import { CallbackOutbox } from '../../src/deliveries/callback-outbox.js';
import { RunFinisher } from '../../src/deliveries/run-finisher.js';
import { RecordingBotRunner } from './recording-bot.runner.js';
import { Clock, SYSTEM_CLOCK } from '../../src/time/clock.js';
import { WebhookMetrics } from '../../src/telemetry/webhook-metrics.js';

export type BotMain = (inputs: BotInputs, ctx: BotContext) => Promise<BotOutput[]>;

/** A bot whose `main` is a function, registered the way the explorer registers a decorated provider. */
class FunctionBot extends WebhookBotHost {
  constructor(private readonly fn: BotMain) {
    super();
  }

  main(inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    return this.fn(inputs, ctx);
  }
}

export interface RecordedEvent {
  name: string;
  event: InvocationEvent;
}

/** A promise and the functions that settle it: lets a test decide when a bot returns. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * The module's parts on the in-memory storage, each built with `new` as a unit spec needs them: the stores of
 * one `InMemoryWebhookStorage`, the real registry, bus, events (on a real EventEmitter2 that records
 * every event), shutdown state and executor, and a `RecordingBotRunner` on that executor. Options are
 * resolved by the module's own `resolveWebhookTriggerOptions`, so they carry the real defaults.
 */
export function createWebhookFakes(options: WebhookTriggerModuleOptions = {}, extras: ChosenExtras = {}) {
  const resolved = resolveWebhookTriggerOptions(options, extras);
  // The module's clock: the extras' (a ManualClock a spec moves), else the system's.
  const clock = (extras.clock as Clock | undefined) ?? SYSTEM_CLOCK;
  const storage = new InMemoryWebhookStorage();
  const { database, triggers, invocations, ledger, accounts, callbacks, unitOfWork } = storage;
  const registry = new WebhookBotRegistry();
  registry.markExplored(); // as after module init: bots a spec adds later are added to a registry already in use
  const bus = new InMemoryClusterBus();
  const emitter = new EventEmitter2();
  const events: RecordedEvent[] = [];
  emitter.onAny((name, event) => void events.push({ name: String(name), event: event as InvocationEvent }));
  const invocationEvents = new InvocationEvents(bus, emitter, new WebhookMetrics(undefined));
  const shutdown = new ShutdownState(clock);
  const outbox = new CallbackOutbox(callbacks, unitOfWork, resolved, bus, clock);
  const finisher = new RunFinisher(outbox, bus, invocationEvents);
  const executor = new InvocationExecutor(invocations, registry, bus, invocationEvents, resolved, outbox, finisher, clock);
  const runner = new RecordingBotRunner(executor);
  const retries = new DispatchRetries(resolved, clock);
  const backlog = new RunBacklog(runner, retries, registry, resolved, clock);
  /** The invocation service on these parts, over `on` (another storage, e.g. one whose writes fail). */
  const serviceOn = (on: InMemoryWebhookStorage): InvocationService =>
    new InvocationService(on, registry, runner, invocationEvents, executor, shutdown, resolved, finisher, clock, retries, backlog);
  const service = serviceOn(storage);

  /** Registers a bot with the module's defaults for what it leaves out. */
  function addBot(bot: Partial<Omit<RegisteredBot, 'instance'>> & { id: string; main?: BotMain }): RegisteredBot {
    const registered: RegisteredBot = {
      id: bot.id,
      name: bot.name ?? bot.id,
      credits: bot.credits ?? 1,
      accountId: bot.accountId ?? resolved.defaultAccountId,
      timeoutMs: bot.timeoutMs ?? resolved.botTimeoutMs,
      retryInterrupted: bot.retryInterrupted ?? false,
      instance: new FunctionBot(bot.main ?? (async () => [{ title: 'ok', message: bot.id }])),
    };
    registry.add(registered);
    return registered;
  }

  /** Stores a trigger of `botId` (account from the bot, if registered) and returns it with its key. */
  async function addTrigger(botId: string, fields: Partial<TriggerRecord> = {}): Promise<{ trigger: TriggerRecord; key: string }> {
    const key = generateTriggerKey();
    const id = fields.id ?? newTriggerId();
    const trigger: TriggerRecord = {
      id,
      botId,
      accountId: registry.get(botId)?.accountId ?? resolved.defaultAccountId,
      name: `${botId} trigger`,
      type: 'webhook',
      keys: [triggerKeyRecord(id, key)],
      createdAt: new Date(),
      ...fields,
    };
    await triggers.create(trigger);
    return { trigger, key };
  }

  return {
    options: resolved,
    clock,
    storage,
    database,
    callbacks,
    outbox,
    finisher,
    triggers,
    invocations,
    ledger,
    accounts,
    unitOfWork,
    registry,
    bus,
    emitter,
    events,
    invocationEvents,
    shutdown,
    executor,
    runner,
    retries,
    backlog,
    service,
    serviceOn,
    addBot,
    addTrigger,
  };
}

export type WebhookFakes = ReturnType<typeof createWebhookFakes>;
