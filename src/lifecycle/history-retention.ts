import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { AUDIT_RETENTION_DELETED } from '../errors/webhook-trigger.messages.js';
import { AuditLog } from '../persistence/audit-log.js';
import { CallbackStore } from '../persistence/callback-store.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import { Clock } from '../time/clock.js';
import { ShutdownState } from './shutdown.state.js';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

/**
 * Deletes finished runs (and finished callback deliveries) older than `historyRetentionDays`, and audit log entries
 * older than `auditRetentionDays`, at startup and then hourly; each on its own (0 keeps that one). Times come from
 * the module's `Clock`.
 */
@Injectable()
export class HistoryRetention implements OnApplicationBootstrap {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly invocations: InvocationRepository,
    private readonly shutdown: ShutdownState,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    private readonly callbacks: CallbackStore,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  onApplicationBootstrap(): void {
    if (this.options.historyRetentionDays === 0 && this.options.auditRetentionDays === 0) return;
    const sweepBoth = async () => {
      await this.sweep();
      await this.sweepAudit();
    };
    void sweepBoth();
    this.shutdown.every(HOUR_MS, sweepBoth);
  }

  /** Deletes what is past retention now; returns how many runs. */
  async sweep(now = this.clock.now()): Promise<number> {
    if (this.options.historyRetentionDays === 0) return 0; // 0 keeps every run
    try {
      const before = new Date(now - this.options.historyRetentionDays * DAY_MS);
      const deleted = await this.invocations.deleteFinishedBefore(before);
      // Callback deliveries go with the runs they reported (those still pending stay until sent or given up).
      await this.callbacks.deleteFinishedBefore(before);
      if (deleted > 0) this.logger.log(`Deleted ${deleted} finished run(s) older than ${this.options.historyRetentionDays} days`);
      return deleted;
    } catch (error) {
      return this.failed('History retention', error);
    }
  }

  /** Deletes audit log entries past `auditRetentionDays` now; returns how many. */
  async sweepAudit(now = this.clock.now()): Promise<number> {
    const days = this.options.auditRetentionDays;
    if (days === 0) return 0; // 0 keeps every entry
    try {
      const deleted = await this.audit.deleteOlderThan(new Date(now - days * DAY_MS));
      if (deleted > 0) this.logger.log(AUDIT_RETENTION_DELETED(deleted, days));
      return deleted;
    } catch (error) {
      return this.failed('Audit log retention', error);
    }
  }

  private failed(what: string, error: unknown): number {
    // A sweep cut off by the app's own shutdown (the database closing under it) is not a failure.
    if (this.shutdown.isShuttingDown) return 0;
    this.logger.error(`${what} failed; retrying in an hour`, error instanceof Error ? error.stack : String(error));
    return 0;
  }
}
