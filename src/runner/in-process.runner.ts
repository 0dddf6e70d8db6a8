import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { ResolvedWebhookTriggerOptions } from '../interfaces/webhook-trigger-options.interface.js';
import { InvocationExecutor } from '../invocations/invocation.executor.js';
import { RESOLVED_OPTIONS } from '../webhook-trigger.constants.js';
import { BotRunner } from './bot-runner.js';

/** Runs bots in this process, at most `maxConcurrentRuns` at once, the rest in arrival order. */
@Injectable()
export class InProcessBotRunner extends BotRunner implements OnModuleDestroy {
  private readonly logger = new Logger('WebhookTriggerRunner');
  private readonly waiting: string[] = [];
  private head = 0;
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly executor: InvocationExecutor,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {
    super();
  }

  async dispatch(invocationId: string): Promise<void> {
    if (this.closed) return;
    this.waiting.push(invocationId);
    this.pump();
  }

  /** Runs in flight right now. */
  get active(): number {
    return this.inFlight.size;
  }

  private pump(): void {
    while (!this.closed && this.inFlight.size < this.options.maxConcurrentRuns && this.head < this.waiting.length) {
      const id = this.waiting[this.head++];
      const run: Promise<void> = this.executor
        .execute(id)
        .catch((error: unknown) => this.logger.error(`Run ${id} could not be executed`, error instanceof Error ? error.stack : String(error)))
        .finally(() => {
          this.inFlight.delete(run);
          this.pump();
        });
      this.inFlight.add(run);
    }
    // Compact the array once it has been drained, so it does not grow forever.
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    }
  }

  /** Stops taking runs and aborts the ones in flight so the database can close behind them. */
  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    this.executor.abortAll();
    await Promise.allSettled([...this.inFlight]);
  }
}
