import { Injectable } from '@nestjs/common';
import { ClusterBus, type RunChange } from '../cluster/cluster-bus.js';

/** What `watch` gives back: `ready` settles once changes from every process the bus reaches arrive here. */
export interface RunWatch {
  ready: Promise<void>;
  stop(): void;
}

/**
 * Tells a watcher of one run that it changed (a state, or one more emitted output), without polling:
 * through the cluster bus's run-change announcements (one bus watcher for all the runs watched in
 * this process, so the Redis bus counts this process as watching while any run is) and its "finished"
 * publication (which always travels, watched or not). The watcher then reads the row; the bus carries ids.
 */
@Injectable()
export class InvocationChanges {
  private readonly watchers = new Map<string, Set<() => void>>();
  private stopWatching?: () => void;

  constructor(private readonly bus: ClusterBus) {}

  /** Number of runs watched in this process. */
  get watchedRuns(): number {
    return this.watchers.size;
  }

  watch(invocationId: string, listener: () => void): RunWatch {
    if (this.watchers.size === 0) this.stopWatching = this.bus.watchChanges((change) => this.changed(change));
    let set = this.watchers.get(invocationId);
    if (!set) this.watchers.set(invocationId, (set = new Set()));
    set.add(listener);
    const unsubscribe = this.bus.subscribe(invocationId, listener);
    let stopped = false;
    return {
      ready: this.bus.whenWatching(),
      stop: () => {
        if (stopped) return;
        stopped = true;
        unsubscribe();
        const current = this.watchers.get(invocationId);
        current?.delete(listener);
        if (current?.size === 0) this.watchers.delete(invocationId);
        if (this.watchers.size === 0) {
          this.stopWatching?.();
          this.stopWatching = undefined;
        }
      },
    };
  }

  private changed(change: RunChange): void {
    const set = this.watchers.get(change.invocationId);
    if (set) for (const listener of [...set]) listener();
  }
}
