import type { InvocationRecord, InvocationStatus, InvocationTransition, NewInvocation } from './records.js';
import type { WebhookTransaction } from './unit-of-work.js';

/**
 * Stores invocations (runs). Abstract class so it doubles as the DI token. Methods that take a `tx`
 * join that transaction; without one they commit on their own.
 */
export abstract class InvocationRepository {
  /** Inserts a `queued` invocation; throws `IdempotencyKeyTakenError` when its key is taken on the trigger. */
  abstract insert(invocation: NewInvocation, tx?: WebhookTransaction): Promise<void>;
  abstract findById(id: string): Promise<InvocationRecord | null>;
  /** The invocation created on `triggerId` with `key` at or after `since`, if any. */
  abstract findByIdempotencyKey(triggerId: string, key: string, since: Date, tx?: WebhookTransaction): Promise<InvocationRecord | null>;
  /** Frees `key` on `triggerId` where it was used before `before`, so an expired key can be used again. */
  abstract releaseIdempotencyKey(triggerId: string, key: string, before: Date, tx?: WebhookTransaction): Promise<void>;
  /**
   * One conditional state change (`… WHERE status = from`): true only for the caller that made it,
   * so two workers can never both start or finish a run.
   */
  abstract transition(id: string, from: InvocationStatus, to: InvocationStatus, fields: InvocationTransition): Promise<boolean>;
  /**
   * Claims a queued run for execution: one conditional change `queued → running` that also returns the
   * row. Null when the run is not queued (already claimed, finished or unknown).
   */
  abstract markRunning(id: string, startedAt: Date): Promise<InvocationRecord | null>;
  /** Ids of invocations in `status`, oldest first. */
  abstract listIdsByStatus(status: InvocationStatus, limit: number): Promise<string[]>;
  /** A bot's invocations, newest first. */
  abstract listByBot(botId: string, limit: number): Promise<InvocationRecord[]>;
}
