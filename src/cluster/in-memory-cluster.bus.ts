import { Injectable } from '@nestjs/common';
import { ClusterBus } from './cluster-bus.js';

/** What `publish` answers: settled once, so a publish makes no promise of its own. */
const PUBLISHED: Promise<void> = Promise.resolve();

/**
 * For runs that finish in this process: a map from id to its waiters, O(1) per wake-up. Also the local
 * half of the Redis bus, which adds the fan-out between processes.
 */
@Injectable()
export class InMemoryClusterBus extends ClusterBus {
  private readonly listeners = new Map<string, Set<() => void>>();
  private readonly anyListeners: Array<(invocationId: string) => void> = [];

  publish(invocationId: string): Promise<void> {
    try {
      this.wakeLocal(invocationId);
      return PUBLISHED;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Calls this process's waiters of `invocationId` once each; the id is forgotten, so a repeat is a no-op. */
  protected wakeLocal(invocationId: string): void {
    for (const listener of this.anyListeners) listener(invocationId);
    const set = this.listeners.get(invocationId);
    if (!set) return;
    this.listeners.delete(invocationId);
    for (const listener of set) listener();
  }

  onAnyFinished(listener: (invocationId: string) => void): void {
    this.anyListeners.push(listener);
  }

  subscribe(invocationId: string, listener: () => void): () => void {
    let set = this.listeners.get(invocationId);
    if (!set) {
      set = new Set();
      this.listeners.set(invocationId, set);
    }
    set.add(listener);
    return () => {
      const current = this.listeners.get(invocationId);
      if (!current) return;
      current.delete(listener);
      if (current.size === 0) this.listeners.delete(invocationId);
    };
  }

  /** Number of ids with waiters; lets tests prove that a gone client released its waiter. */
  get waitingIds(): number {
    return this.listeners.size;
  }
}
