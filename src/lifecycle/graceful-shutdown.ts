import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { SHUTDOWN_HOOKS_OFF } from '../errors/webhook-trigger.messages.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import { InvocationExecutor } from '../runs/invocation.executor.js';
import { ShutdownState } from './shutdown.state.js';

/**
 * Graceful shutdown (`app.close()`, or SIGTERM with `enableShutdownHooks()`), in this order:
 * 1. new triggers get 503 with Retry-After, waiting sync requests are answered 408 at once (so they
 *    retry, as the spec advises), nothing new starts;
 * 2. running bots get `shutdownGraceMs` to finish; then their signal fires and they are stored
 *    `failed` ("interrupted"). Nothing is left `running`; runs still `queued` wait for the next start.
 * Runs in `onModuleDestroy`, while the HTTP server still answers and before the database closes.
 * On SIGTERM that happens only with `app.enableShutdownHooks()`; an HTTP app started without it is
 * warned at startup (without it, a SIGTERM cuts waiting syncs and running bots off).
 */
@Injectable()
export class GracefulShutdown implements OnModuleDestroy, OnApplicationBootstrap {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly state: ShutdownState,
    private readonly executor: InvocationExecutor,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  onApplicationBootstrap(): void {
    // enableShutdownHooks() listens for the signals on the process; nothing else in an app does by default.
    if (this.adapterHost.httpAdapter && process.listenerCount('SIGTERM') === 0) this.logger.warn(SHUTDOWN_HOOKS_OFF);
  }

  async onModuleDestroy(): Promise<void> {
    this.state.begin();
    await this.executor.drain(this.options.shutdownGraceMs);
  }
}
