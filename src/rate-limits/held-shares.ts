import { ProcessFullError, ShareHeldError } from '../errors/webhook-trigger.errors.js';
import type { TriggerRecord } from '../persistence/records.js';

/** How many a process may hold at once: in all, of one trigger (one key holder), of one account's triggers. */
export interface ShareCaps {
  total: number;
  perTrigger: number;
  perAccount: number;
}

/** The words of each cap's refusal: 429 (`ShareHeldError`) for a trigger's or an account's share, 503 (`ProcessFullError`) for the process. */
export interface ShareRefusals {
  ofTrigger: string;
  ofAccount: string;
  ofProcess: string;
}

/**
 * Something a request holds for as long as it lasts (a run event stream, a sync waiter), counted in all, per
 * trigger and per account, so that one key holder cannot take every place of the process from the others: its
 * trigger is refused at `perTrigger`, its account at `perAccount`, and the process only at `total`. A place is
 * taken at once (no await between the check and the count, so concurrent takes never exceed a cap) and given back
 * exactly once.
 */
export class HeldShares {
  private total = 0;
  private readonly perTrigger = new KeyedCounts();
  private readonly perAccount = new KeyedCounts();

  constructor(
    private readonly caps: ShareCaps,
    private readonly refusals: ShareRefusals,
  ) {}

  get count(): number {
    return this.total;
  }

  /** Takes a place for `trigger`, or throws the refusal; returns what gives it back (once). */
  take(trigger: Pick<TriggerRecord, 'id' | 'accountId'>): () => void {
    // The key holder's own share first: its refusal (429) tells it that it is the one to wait.
    if (this.perTrigger.of(trigger.id) >= this.caps.perTrigger) throw new ShareHeldError(this.refusals.ofTrigger);
    if (this.perAccount.of(trigger.accountId) >= this.caps.perAccount) throw new ShareHeldError(this.refusals.ofAccount);
    if (this.total >= this.caps.total) throw new ProcessFullError(this.refusals.ofProcess);
    this.total++;
    this.perTrigger.add(trigger.id, 1);
    this.perAccount.add(trigger.accountId, 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.total--;
      this.perTrigger.add(trigger.id, -1);
      this.perAccount.add(trigger.accountId, -1);
    };
  }
}

/** Counts by key (trigger, account, client address), holding only the keys whose count is above zero. */
export class KeyedCounts {
  private readonly counts = new Map<string, number>();

  of(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /** The keys counted `n` or more. */
  keysAtLeast(n: number): string[] {
    const keys: string[] = [];
    for (const [key, count] of this.counts) if (count >= n) keys.push(key);
    return keys;
  }

  add(key: string, n: number): void {
    const next = this.of(key) + n;
    if (next > 0) this.counts.set(key, next);
    else this.counts.delete(key);
  }
}
