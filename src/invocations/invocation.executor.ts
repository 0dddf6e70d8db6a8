import { Injectable, Logger } from '@nestjs/common';
import type { BotOutput } from '../bots/bot.types.js';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import { CompletionBus } from '../bus/completion-bus.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import type { InvocationError, InvocationStatus } from '../persistence/records.js';
import { BOT_NOT_REGISTERED, INVALID_OUTPUTS } from '../webhook-trigger.messages.js';
import { InvocationEvents } from './invocation.events.js';

function isValidOutputs(value: unknown): value is BotOutput[] {
  return (
    Array.isArray(value) &&
    value.every(
      (o) => typeof o === 'object' && o !== null && typeof (o as BotOutput).title === 'string' && typeof (o as BotOutput).message === 'string',
    )
  );
}

/** Keeps exactly title and message, so a bot cannot leak extra fields into responses by accident. */
const cleanOutputs = (outputs: BotOutput[]): BotOutput[] => outputs.map(({ title, message }) => ({ title, message }));

/** Runs one invocation: mark running → `main()` → store the outcome → wake waiters → emit events. */
@Injectable()
export class InvocationExecutor {
  private readonly logger = new Logger('WebhookTriggerExecutor');
  private readonly controllers = new Map<string, AbortController>();

  constructor(
    private readonly invocations: InvocationRepository,
    private readonly registry: WebhookBotRegistry,
    private readonly bus: CompletionBus,
    private readonly events: InvocationEvents,
  ) {}

  async execute(invocationId: string): Promise<void> {
    const startedAt = new Date();
    // The conditional change makes a second dispatch of the same id a no-op.
    const invocation = await this.invocations.markRunning(invocationId, startedAt);
    if (!invocation) return;
    this.events.emit(invocation, 'running');

    let status: InvocationStatus = 'succeeded';
    let outputs: BotOutput[] = [];
    let error: InvocationError | null = null;
    const bot = this.registry.get(invocation.botId);
    if (!bot) {
      status = 'failed';
      error = { message: BOT_NOT_REGISTERED(invocation.botId) };
    } else {
      const controller = new AbortController();
      this.controllers.set(invocationId, controller);
      try {
        const result: unknown = await bot.instance.main(invocation.inputs, {
          invocationId,
          triggerId: invocation.triggerId,
          botId: invocation.botId,
          accountId: invocation.accountId,
          signal: controller.signal,
          logger: new Logger(`WebhookBot:${bot.id}:${invocationId}`),
        });
        if (isValidOutputs(result)) {
          outputs = cleanOutputs(result);
        } else {
          status = 'failed';
          error = { message: INVALID_OUTPUTS };
        }
      } catch (thrown: unknown) {
        status = 'failed';
        error = { message: thrown instanceof Error ? thrown.message : String(thrown) };
      } finally {
        this.controllers.delete(invocationId);
      }
    }

    const finishedAt = new Date();
    if (await this.invocations.transition(invocationId, 'running', status, { finishedAt, outputs, error })) {
      await this.bus.publish(invocationId);
      this.events.emit(invocation, status, finishedAt.getTime() - startedAt.getTime());
    } else {
      this.logger.warn(`Run ${invocationId} was finished by someone else; its outcome here was dropped`);
    }
  }

  /** Fires the AbortSignal of every run in this process. */
  abortAll(): void {
    for (const controller of this.controllers.values()) controller.abort(new Error('The application is shutting down'));
  }
}
