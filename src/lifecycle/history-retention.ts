import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { CallbackStore } from '../persistence/callback-store.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import { ShutdownState } from './shutdown.state.js';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

/** Deletes finished runs (and finished callback deliveries) older than `historyRetentionDays`, at startup and then hourly. */
@Injectable()
export class HistoryRetention implements OnApplicationBootstrap {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly invocations: InvocationRepository,
    private readonly shutdown: ShutdownState,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    private readonly callbacks: CallbackStore,
  ) {}

  onApplicationBootstrap(): void {
    if (this.options.historyRetentionDays === 0) return;
    void this.sweep();
    this.shutdown.every(HOUR_MS, () => this.sweep());
  }

  /** Deletes what is past retention now; returns how many runs. */
  async sweep(now = Date.now()): Promise<number> {
    if (this.options.historyRetentionDays === 0) return 0; // 0 keeps every run
    try {
      const before = new Date(now - this.options.historyRetentionDays * DAY_MS);
      const deleted = await this.invocations.deleteFinishedBefore(before);
      // Callback deliveries go with the runs they reported (those still pending stay until sent or given up).
      await this.callbacks.deleteFinishedBefore(before);
      if (deleted > 0) this.logger.log(`Deleted ${deleted} finished run(s) older than ${this.options.historyRetentionDays} days`);
      return deleted;
    } catch (error) {
      // A sweep cut off by the app's own shutdown (the database closing under it) is not a failure.
      if (this.shutdown.isShuttingDown) return 0;
      this.logger.error('History retention failed; retrying in an hour', error instanceof Error ? error.stack : String(error));
      return 0;
    }
  }
}
