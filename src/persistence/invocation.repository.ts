import type { BotOutput } from '../bots/bot.types.js';
import type { InvocationRecord, InvocationStatus, InvocationTransition, NewInvocation } from './records.js';
import type { WebhookTransaction } from './unit-of-work.js';

/** How a running run is known to be lost: its lease ran out, or the queue says its owner died. */
export type LostRun = { leaseExpiredBefore: Date } | { owner: string };

/**
 * Stores invocations (runs). Abstract class so it doubles as the DI token. Methods that take a `tx`
 * join that transaction; without one they commit on their own.
 */
export abstract class InvocationRepository {
  /**
   * True when `insert` stores a run's `claim` (stored `running` with its owner, lease and first attempt:
   * accept-as-running). A store that leaves it false gets every run `queued`, claimed by `markRunning`.
   */
  get storesClaims(): boolean {
    return false;
  }

  /**
   * Inserts a `queued` invocation, or a `running` one when it carries a `claim` (and `storesClaims`);
   * throws `IdempotencyKeyTakenError` when its key is taken on the trigger.
   */
  abstract insert(invocation: NewInvocation, tx?: WebhookTransaction): Promise<void>;
  abstract findById(id: string): Promise<InvocationRecord | null>;
  /** The invocation created on `triggerId` with `key` at or after `since`, if any. */
  abstract findByIdempotencyKey(triggerId: string, key: string, since: Date, tx?: WebhookTransaction): Promise<InvocationRecord | null>;
  /** Frees `key` on `triggerId` where it was used before `before`, so an expired key can be used again. */
  abstract releaseIdempotencyKey(triggerId: string, key: string, before: Date, tx?: WebhookTransaction): Promise<void>;
  /**
   * One conditional state change (`… WHERE status = from`, and `owner = …` when given): true only for
   * the caller that made it, so two workers can never both finish a run. With `tx`, commits with it.
   */
  abstract transition(
    id: string,
    from: InvocationStatus,
    to: InvocationStatus,
    fields: InvocationTransition,
    condition?: { owner?: string; tx?: WebhookTransaction },
  ): Promise<boolean>;
  /**
   * Claims a queued run for execution: one conditional change `queued → running` that records the
   * owning process and its lease, adds 1 to `attempts` in the same change (so an attempt whose process
   * dies is counted, once), and returns the row. Null when the run is not queued (already claimed,
   * finished or unknown).
   */
  abstract markRunning(
    id: string,
    startedAt: Date,
    owner: string,
    leaseExpiresAt: Date,
    tx?: WebhookTransaction,
  ): Promise<InvocationRecord | null>;
  /**
   * Appends one output to a running run's outputs (an output the bot emitted while running), conditional
   * on the run still being `running` and held by `owner`: false when it is not (it ended, or another
   * process holds it), and nothing changes. One statement, so what was emitted survives a crash.
   */
  abstract appendOutput(id: string, owner: string, output: BotOutput, tx?: WebhookTransaction): Promise<boolean>;
  /**
   * Extends the leases of the runs `ids` that `owner` still holds `running`: the runs it has in flight, never
   * all its rows (a run whose outcome could not be stored is no longer run by anyone, and must expire to be
   * recovered). A store may leave out a run another statement is ending or claiming at that moment (rather
   * than wait for it): the next renewal, a third of a lease later, takes it.
   */
  abstract renewLeases(owner: string, ids: readonly string[], leaseExpiresAt: Date): Promise<void>;
  /** Runs still `running` whose lease ran out before `now`: their process died or stalled. */
  abstract listExpiredLeases(now: Date, limit: number): Promise<InvocationRecord[]>;
  /**
   * Recovers one interrupted run: `running → queued` (to run again) or `running → failed`. Conditional
   * on the run still being lost: its lease still expired (`leaseExpiredBefore`; a run whose owner renewed
   * it is left alone), or still held by `owner` (a process the queue declared dead: BullMQ lost its lock).
   * With `tx`, commits with it.
   */
  abstract recoverInterrupted(
    id: string,
    lost: LostRun,
    to: 'queued' | 'failed',
    fields: InvocationTransition,
    tx?: WebhookTransaction,
  ): Promise<boolean>;
  /** Deletes finished runs created before `before`; returns how many. */
  abstract deleteFinishedBefore(before: Date): Promise<number>;
  /**
   * Runs still `queued` (created before `createdBefore`, when given), oldest first: id and account only,
   * what a runner needs to dispatch them, so even a large backlog is one cheap query.
   */
  abstract listQueued(limit: number, createdBefore?: Date): Promise<Array<Pick<InvocationRecord, 'id' | 'accountId'>>>;
  /**
   * A page of a bot's invocations, newest first by `(createdAt, id)`, for history lists. Each unbounded
   * field is bounded in the query itself, so a long one never leaves the database for a list: outputs
   * longer than `outputsUpTo` bytes of JSON come back `null` with `outputsTruncated: true`, inputs
   * longer than `inputsUpTo` come back `{}` with `inputsTruncated: true`, an error longer than `errorUpTo`
   * comes back `null` with `errorTruncated: true`. A page of history never carries megabytes (`findById`
   * gives a run whole).
   */
  abstract listByBot(botId: string, query: HistoryQuery): Promise<InvocationRecord[]>;
  /** How many runs of the bot were created at or after `since`, counting no further than `cap`. */
  abstract countByBotSince(botId: string, since: Date, cap: number): Promise<number>;
  /** The newest `createdAt` of each trigger's runs (triggers without runs are absent). */
  abstract lastUsedAt(triggerIds: string[]): Promise<Map<string, Date>>;
}

/** What a history page asks for; every filter given must hold (AND). */
export interface HistoryQuery {
  /** 1..1000. */
  limit: number;
  /** Longer outputs (bytes of JSON, UTF-8) come back `null`, with `outputsTruncated: true`. */
  outputsUpTo: number;
  /** Longer inputs (bytes of JSON, UTF-8) come back `{}`, with `inputsTruncated: true`. */
  inputsUpTo: number;
  /** A longer error (bytes of JSON, UTF-8) comes back `null`, with `errorTruncated: true`. */
  errorUpTo: number;
  status?: InvocationStatus;
  triggerId?: string;
  /** `createdAt >= createdFrom`. */
  createdFrom?: Date;
  /** `createdAt < createdBefore`. */
  createdBefore?: Date;
  /** An exact invocation id or an exact idempotency key (either matches). */
  search?: string;
  /** Keyset cursor: only runs strictly older than this one in `(createdAt, id)` order (the last run of the previous page). */
  after?: { createdAt: Date; id: string };
}
