import { Inject, Injectable } from '@nestjs/common';
import { ClusterBus } from '../cluster/cluster-bus.js';
import { TOO_MANY_SYNC_WAITERS, TOO_MANY_SYNC_WAITERS_OF } from '../errors/webhook-trigger.messages.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { InvocationRepository } from '../persistence/invocation.repository.js';
import { TERMINAL_STATUSES, type InvocationRecord, type TriggerRecord } from '../persistence/records.js';
import { HeldShares } from '../rate-limits/held-shares.js';
import { ShutdownState } from '../lifecycle/shutdown.state.js';
import { Clock, type ClockTimer } from '../time/clock.js';

export type WaitResult =
  | { kind: 'finished'; invocation: InvocationRecord }
  | { kind: 'timeout'; invocation: InvocationRecord }
  | { kind: 'shutdown'; invocation: InvocationRecord }
  | { kind: 'not-found' }
  | { kind: 'aborted' };

type WakeReason = 'finished' | 'timeout' | 'aborted' | 'shutdown';

/**
 * Waits for a run to finish, woken by the cluster bus; never polls the database. Bounded by `maxSyncWaiters`, and
 * per trigger and per account below it (`HeldShares`): a sync for a finished run answers at once and holds nothing.
 */
@Injectable()
export class InvocationWaiter {
  /**
   * Waiters to answer at once when shutdown begins. One listener on the shutdown signal serves them
   * all: a listener each would put 10,000 listeners on one AbortSignal for 10,000 waiting requests.
   */
  private readonly onShutdown = new Set<() => void>();
  private readonly shares: HeldShares;

  constructor(
    private readonly invocations: InvocationRepository,
    private readonly bus: ClusterBus,
    private readonly shutdown: ShutdownState,
    private readonly clock: Clock,
    @Inject(RESOLVED_OPTIONS) options: ResolvedWebhookTriggerOptions,
  ) {
    this.shares = new HeldShares(
      { total: options.maxSyncWaiters, perTrigger: options.maxSyncWaitersPerTrigger, perAccount: options.maxSyncWaitersPerAccount },
      {
        ofTrigger: TOO_MANY_SYNC_WAITERS_OF('trigger', options.maxSyncWaitersPerTrigger, 'maxSyncWaitersPerTrigger'),
        ofAccount: TOO_MANY_SYNC_WAITERS_OF('account', options.maxSyncWaitersPerAccount, 'maxSyncWaitersPerAccount'),
        ofProcess: TOO_MANY_SYNC_WAITERS(options.maxSyncWaiters),
      },
    );
    shutdown.signal.addEventListener('abort', () => this.onShutdown.forEach((wake) => wake()), { once: true });
  }

  /** Sync requests in this waiter now (each is in `onShutdown` for as long as it is here, its first read included). */
  get waiting(): number {
    return this.onShutdown.size;
  }

  /** Sync requests holding a place (`maxSyncWaiters`): those waiting for an unfinished run. */
  get held(): number {
    return this.shares.count;
  }

  /**
   * Subscribes BEFORE reading the row: a run that finishes between the read and the subscription
   * would otherwise never wake this waiter.
   */
  async wait(
    trigger: Pick<TriggerRecord, 'id' | 'accountId'>,
    invocationId: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<WaitResult> {
    let wake!: (reason: WakeReason) => void;
    const woken = new Promise<WakeReason>((resolve) => (wake = resolve));
    const unsubscribe = this.bus.subscribe(invocationId, () => wake('finished'));
    let timer: ClockTimer | undefined;
    const onAbort = () => wake('aborted');
    const onShutdown = () => wake('shutdown');
    this.onShutdown.add(onShutdown);
    let release: (() => void) | undefined;
    try {
      const current = await this.invocations.findById(invocationId);
      if (!current || current.triggerId !== trigger.id) return { kind: 'not-found' };
      if (TERMINAL_STATUSES.has(current.status)) return { kind: 'finished', invocation: current };
      if (signal?.aborted) return { kind: 'aborted' };
      if (this.shutdown.isShuttingDown) return { kind: 'shutdown', invocation: current };
      release = this.shares.take(trigger); // 429 or 503 when the trigger, its account or the process holds its share
      signal?.addEventListener('abort', onAbort, { once: true });
      timer = this.clock.setTimer(() => wake('timeout'), timeoutMs);
      const reason = await woken;
      if (reason === 'aborted') return { kind: 'aborted' };
      const latest = (await this.invocations.findById(invocationId)) ?? current;
      if (TERMINAL_STATUSES.has(latest.status)) return { kind: 'finished', invocation: latest };
      return { kind: reason === 'shutdown' ? 'shutdown' : 'timeout', invocation: latest };
    } finally {
      release?.();
      timer?.clear();
      signal?.removeEventListener('abort', onAbort);
      this.onShutdown.delete(onShutdown);
      unsubscribe();
    }
  }
}
