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
  private readonly perTrigger = new Map<string, number>();
  private readonly perAccount = new Map<string, number>();

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
    if ((this.perTrigger.get(trigger.id) ?? 0) >= this.caps.perTrigger) throw new ShareHeldError(this.refusals.ofTrigger);
    if ((this.perAccount.get(trigger.accountId) ?? 0) >= this.caps.perAccount) throw new ShareHeldError(this.refusals.ofAccount);
    if (this.total >= this.caps.total) throw new ProcessFullError(this.refusals.ofProcess);
    this.total++;
    add(this.perTrigger, trigger.id, 1);
    add(this.perAccount, trigger.accountId, 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.total--;
      add(this.perTrigger, trigger.id, -1);
      add(this.perAccount, trigger.accountId, -1);
    };
  }
}

/** Adds to a count, dropping it at zero (the maps hold only triggers and accounts holding places). */
function add(counts: Map<string, number>, key: string, n: number): void {
  const next = (counts.get(key) ?? 0) + n;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}
