import { TooManyEventStreamsError, TooManyEventStreamsOfError } from '../errors/webhook-trigger.errors.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import type { TriggerRecord } from '../persistence/records.js';

type StreamCaps = Pick<ResolvedWebhookTriggerOptions, 'maxEventStreams' | 'maxEventStreamsPerTrigger' | 'maxEventStreamsPerAccount'>;

/**
 * The run event streams a process holds, counted in all, per trigger and per account, so that one key
 * holder cannot take every stream of the process from the others: its trigger is refused (429) at
 * `maxEventStreamsPerTrigger`, its account at `maxEventStreamsPerAccount`, and the process (503) only at
 * `maxEventStreams`. A slot is taken before anything is read or written and given back exactly once.
 */
export class EventStreamShares {
  private total = 0;
  private readonly perTrigger = new Map<string, number>();
  private readonly perAccount = new Map<string, number>();

  constructor(private readonly caps: StreamCaps) {}

  get count(): number {
    return this.total;
  }

  /** Takes a slot for a stream of `trigger`, or throws the refusal; returns what gives it back (once). */
  take(trigger: Pick<TriggerRecord, 'id' | 'accountId'>): () => void {
    // The key holder's own share first: its refusal (429) tells it that it is the one to wait.
    if ((this.perTrigger.get(trigger.id) ?? 0) >= this.caps.maxEventStreamsPerTrigger) {
      throw new TooManyEventStreamsOfError('trigger', this.caps.maxEventStreamsPerTrigger);
    }
    if ((this.perAccount.get(trigger.accountId) ?? 0) >= this.caps.maxEventStreamsPerAccount) {
      throw new TooManyEventStreamsOfError('account', this.caps.maxEventStreamsPerAccount);
    }
    if (this.total >= this.caps.maxEventStreams) throw new TooManyEventStreamsError(this.caps.maxEventStreams);
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

/** Adds to a count, dropping it at zero (the maps hold only triggers and accounts with streams open). */
function add(counts: Map<string, number>, key: string, n: number): void {
  const next = (counts.get(key) ?? 0) + n;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}
