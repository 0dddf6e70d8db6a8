import type { ServiceCheck } from '../health/service-check.js';
import type { InvocationStatus } from '../persistence/records.js';

/** A run entered a state: what the admin's live history needs to update one row. */
export interface RunChange {
  invocationId: string;
  botId: string;
  triggerId: string;
  status: InvocationStatus;
  /** `output`: a running run stored one more emitted output (its status did not change). Absent: a state change. */
  kind?: 'output';
}

/**
 * Carries "invocation X finished" to waiting sync requests, ids only; waiters read the result from the
 * repository. Replace it (e.g. with Redis pub/sub) when runs finish in another process.
 *
 * It also carries every state change of a run to the watchers of live history (`announce` /
 * `watchChanges`). The default reaches this process only; the Redis bus fans changes out between
 * processes, so a screen on one node sees runs that start and finish on another.
 *
 * And it carries "trigger X changed" (key rotated, deleted, created) to every process's trigger cache
 * (`announceTriggerChanged` / `onTriggerChanged`). The trigger cache is used only while
 * `carriesTriggerChanges` is true: a bus of your own keeps the defaults (this process only, false), so
 * every trigger request reads its trigger, unless it carries the announcements to every process serving
 * the app and says so.
 */
export abstract class ClusterBus {
  private readonly changeWatchers = new Set<(change: RunChange) => void>();
  private readonly triggerListeners = new Set<(triggerId: string | null) => void>();

  abstract publish(invocationId: string): Promise<void>;
  /** Calls `listener` when `invocationId` finishes; returns the function that unsubscribes. */
  abstract subscribe(invocationId: string, listener: () => void): () => void;
  /**
   * Calls `listener` with every id published, from any process the bus reaches: how a process learns
   * that a run it is executing was cancelled or recovered elsewhere, so it can fire the bot's signal.
   */
  abstract onAnyFinished(listener: (invocationId: string) => void): void;

  /** Tells every change watcher the bus reaches that a run entered a state. Never throws, never waits. */
  announce(change: RunChange): void {
    this.notifyChangeWatchers(change);
  }

  /** Calls `listener` with every change announced; returns the function that stops it. */
  watchChanges(listener: (change: RunChange) => void): () => void {
    this.changeWatchers.add(listener);
    if (this.changeWatchers.size === 1) this.firstChangeWatcher();
    return () => {
      if (this.changeWatchers.delete(listener) && this.changeWatchers.size === 0) this.lastChangeWatcherGone();
    };
  }

  /**
   * Resolves once changes announced anywhere the bus reaches are being delivered to this process's
   * watchers (at once in process; with Redis, once the change channel is subscribed and the other
   * processes were told someone watches). A watcher that read state before this may have missed a change.
   */
  whenWatching(): Promise<void> {
    return Promise.resolve();
  }

  /** Number of change watchers in this process. */
  get changeWatcherCount(): number {
    return this.changeWatchers.size;
  }

  protected notifyChangeWatchers(change: RunChange): void {
    for (const watcher of this.changeWatchers) watcher(change);
  }

  /**
   * Tells every process the bus reaches that a trigger changed, so their caches drop it; this process's
   * listeners hear it before this returns. Resolves once sent; never throws (a failure is logged by the
   * bus, and caches elsewhere drop the trigger at their TTL).
   */
  async announceTriggerChanged(triggerId: string): Promise<void> {
    this.notifyTriggerChanged(triggerId);
  }

  /**
   * Calls `listener` with every trigger id announced anywhere the bus reaches, and with `null` when any
   * trigger may have changed unheard (e.g. after a lost connection). Returns the function that stops it.
   */
  onTriggerChanged(listener: (triggerId: string | null) => void): () => void {
    this.triggerListeners.add(listener);
    return () => void this.triggerListeners.delete(listener);
  }

  /**
   * True while `announceTriggerChanged` reaches every process that serves this app's triggers: only then
   * may a process cache trigger look-ups. False by default: this class cannot know how many processes
   * share the database (with the in-process bus, a second process would never hear of a rotated key).
   */
  get carriesTriggerChanges(): boolean {
    return false;
  }

  protected notifyTriggerChanged(triggerId: string | null): void {
    for (const listener of this.triggerListeners) listener(triggerId);
  }

  /** The outside services this bus relies on (e.g. Redis), for the health probes. None by default. */
  serviceChecks(): readonly ServiceCheck[] {
    return [];
  }

  /** Hook for buses that listen to other processes only while someone in this one watches. */
  protected firstChangeWatcher(): void {}
  protected lastChangeWatcherGone(): void {}
}
