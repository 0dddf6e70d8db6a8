import { Inject, Injectable, Logger } from '@nestjs/common';
import { WebhookBotRegistry } from '../bots/webhook-bot.registry.js';
import { BacklogFullError, RateLimitedError } from '../errors/webhook-trigger.errors.js';
import { ACCOUNT_BACKLOG_FULL, LOG_ACCOUNT_BACKLOG_FULL, LOG_BACKLOG_FULL } from '../errors/webhook-trigger.messages.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { Clock } from '../time/clock.js';
import { BotRunner } from './bot-runner.js';
import { DispatchRetries } from './dispatch-retries.js';

/** Refusals over `maxQueuedRuns` (and over an account's share of it) are logged at most this often, with how many there were meanwhile. */
const BACKLOG_LOG_EVERY_MS = 10_000;

/** How many of `maxQueuedRuns` one account's waiting runs may be: half, so one account never fills it for the rest. */
export function accountBacklogShare(maxQueuedRuns: number): number {
  return Math.ceil(maxQueuedRuns / 2);
}

/**
 * The backlog `maxQueuedRuns` bounds, decided in one place: the runs waiting to start (the runner's `backlog()`
 * and the runs waiting in DispatchRetries to be dispatched again: a runner that throws must not let accepts grow
 * without bound), when it is full, and one account's share of it, counted the same way (`countOf`). The trigger's refusal (`admit`), the health
 * check's `backlog` and the backlog gauge (`count`, `full`) read it, so they never disagree.
 */
@Injectable()
export class RunBacklog {
  private readonly logger = new Logger(LOG_CONTEXT);
  private refusals = 0;
  private loggedAt = -Infinity;
  /** Refusals past an account's share since the last warning, by account (the registered bots' accounts: bounded). */
  private readonly shareRefusals = new Map<string, number>();
  private shareLoggedAt = -Infinity;

  constructor(
    private readonly runner: BotRunner,
    private readonly retries: DispatchRetries,
    private readonly registry: WebhookBotRegistry,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    private readonly clock: Clock,
  ) {}

  /** Runs waiting to start, as `maxQueuedRuns` bounds them; answered from memory (read on every trigger). */
  count(): number {
    return this.runner.backlog() + this.retries.pending;
  }

  /** Of those, the account's (the runner's `backlogOf` and its runs waiting to be dispatched again): what its share bounds. */
  countOf(accountId: string): number {
    return this.runner.backlogOf(accountId) + this.retries.pendingOf(accountId);
  }

  /** Whether `queued` waiting runs fill the bound (`maxQueuedRuns`; 0 sets none). */
  full(queued = this.count()): boolean {
    const max = this.options.maxQueuedRuns;
    return max > 0 && queued >= max;
  }

  /**
   * Refuses a trigger of `accountId` over the bound (503) before anything is read, written or charged: also an
   * idempotent repeat of a run already accepted (it would cost nothing, but telling it apart takes a database read,
   * which is what a full backlog must not cost). Below it, when the bots belong to more than one account, one
   * account may hold half of it: past its share its triggers are refused 429 (the account's limit), while the
   * others' still go (an account alone may fill it: nobody else to keep room for).
   */
  admit(accountId: string): void {
    const max = this.options.maxQueuedRuns;
    if (max === 0) return;
    if (!this.full()) {
      const share = accountBacklogShare(max);
      if (!this.registry.manyAccounts || this.countOf(accountId) < share) return;
      this.noteShareRefusal(accountId, share);
      throw new RateLimitedError('account', 1, ACCOUNT_BACKLOG_FULL(share));
    }
    this.refusals++;
    const now = this.clock.now();
    if (now - this.loggedAt >= BACKLOG_LOG_EVERY_MS) {
      this.logger.warn(LOG_BACKLOG_FULL(max, this.refusals));
      this.refusals = 0;
      this.loggedAt = now;
    }
    throw new BacklogFullError(max);
  }

  /** An account's bots are not keeping up with its accepts: its operator hears of it, at most every `BACKLOG_LOG_EVERY_MS`. */
  private noteShareRefusal(accountId: string, share: number): void {
    this.shareRefusals.set(accountId, (this.shareRefusals.get(accountId) ?? 0) + 1);
    const now = this.clock.now();
    if (now - this.shareLoggedAt < BACKLOG_LOG_EVERY_MS) return;
    this.logger.warn(LOG_ACCOUNT_BACKLOG_FULL(share, this.shareRefusals));
    this.shareRefusals.clear();
    this.shareLoggedAt = now;
  }
}
