import { Inject, Injectable, Logger } from '@nestjs/common';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { BotRunner } from './bot-runner.js';
import { InvocationExecutor } from './invocation.executor.js';

/**
 * Runs bots in this process, at most `maxConcurrentRuns` at once, the rest in arrival order. A slot is
 * freed when a run ends, also when it ends by timeout or cancel while its bot ignores the signal.
 * Once the executor drains (shutdown) it starts nothing new: runs still waiting stay `queued` in the
 * database and the next start dispatches them.
 */
@Injectable()
export class InProcessBotRunner extends BotRunner {
  private readonly logger = new Logger(LOG_CONTEXT);
  private readonly waiting: string[] = [];
  private head = 0;
  private running = 0;

  constructor(
    private readonly executor: InvocationExecutor,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {
    super();
  }

  async dispatch(invocationId: string): Promise<void> {
    if (this.executor.draining) return;
    this.waiting.push(invocationId);
    this.pump();
  }

  private pump(): void {
    while (!this.executor.draining && this.running < this.options.maxConcurrentRuns && this.head < this.waiting.length) {
      const id = this.waiting[this.head++];
      this.running++;
      this.executor
        .execute(id)
        .catch((error: unknown) =>
          this.logger.error(`Run ${id} could not be executed`, error instanceof Error ? error.stack : String(error)),
        )
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
    // Compact the array once it has been drained, so it does not grow forever.
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    }
  }
}
