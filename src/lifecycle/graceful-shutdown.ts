import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import { InvocationExecutor } from '../runs/invocation.executor.js';
import { ShutdownState } from './shutdown.state.js';

/**
 * Graceful shutdown (`app.close()`, or SIGTERM with `enableShutdownHooks()`), in this order:
 * 1. new triggers get 503 with Retry-After, waiting sync requests are answered 408 at once (so they
 *    retry, as the spec advises), nothing new starts;
 * 2. running bots get `shutdownGraceMs` to finish; then their signal fires and they are stored
 *    `failed` ("interrupted"). Nothing is left `running`; runs still `queued` wait for the next start.
 * Runs in `onModuleDestroy`, while the HTTP server still answers and before the database closes.
 */
@Injectable()
export class GracefulShutdown implements OnModuleDestroy {
  constructor(
    private readonly state: ShutdownState,
    private readonly executor: InvocationExecutor,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  async onModuleDestroy(): Promise<void> {
    this.state.begin();
    await this.executor.drain(this.options.shutdownGraceMs);
  }
}
