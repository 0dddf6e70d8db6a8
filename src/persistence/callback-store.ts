import type { AttemptResult, CallbackRecord, DeliveryRecord } from './records.js';
import type { WebhookTransaction } from './unit-of-work.js';

/** A callback as the admin saves it: the store sets it enabled, with no failures. */
export type NewCallback = Omit<CallbackRecord, 'createdAt' | 'updatedAt' | 'consecutiveFailures' | 'disabledReason' | 'enabled'>;

/** A due delivery as the sender lists it: its id, its trigger (whose callback it goes to) and the trigger's account. */
export interface DueDelivery {
  id: string;
  triggerId: string;
  /** The trigger's account, whose callbacks share a bound of attempts in flight; without it, only the trigger's bound applies. */
  accountId?: string;
}

/**
 * Triggers' callbacks (the admin's settings) and their deliveries (the outbox). Deliveries join a unit of
 * work's transaction (`tx`), so a run's change and the delivery that reports it commit together.
 */
export abstract class CallbackStore {
  abstract findCallback(triggerId: string, tx?: WebhookTransaction): Promise<CallbackRecord | null>;
  /** Creates or replaces a trigger's callback (enabled, no failures): what the admin's PUT does. */
  abstract saveCallback(callback: NewCallback, now: Date): Promise<void>;
  /** Replaces a callback's secret; false when the trigger has no callback. */
  abstract replaceSecret(triggerId: string, secret: string, now: Date): Promise<boolean>;
  /** False when the trigger had no callback. */
  abstract deleteCallback(triggerId: string): Promise<boolean>;
  /** A delivered attempt: the run of failures ends. */
  abstract resetFailures(triggerId: string): Promise<void>;
  /** One more delivery gave up; returns the new count (null when the callback is gone). */
  abstract countFailure(triggerId: string): Promise<number | null>;
  /** Disables an enabled callback; true for the caller that disabled it (so the event is emitted once). */
  abstract disable(triggerId: string, reason: string, now: Date): Promise<boolean>;

  abstract insertDelivery(delivery: DeliveryRecord, tx?: WebhookTransaction): Promise<void>;
  abstract findDelivery(id: string): Promise<DeliveryRecord | null>;
  /**
   * Claims a due delivery for one attempt: conditional on it being pending, due, and not held by a live
   * sender (no owner, or its lease ran out). Null when another process holds it or it is not due.
   */
  abstract claim(id: string, owner: string, now: Date, leaseExpiresAt: Date): Promise<DeliveryRecord | null>;
  /** Records an attempt and releases the claim; false when this owner no longer held it. */
  abstract recordAttempt(id: string, owner: string, result: AttemptResult): Promise<boolean>;
  /** Ends a pending delivery without an attempt (its callback was deleted or disabled). */
  abstract abandon(id: string, owner: string, error: string): Promise<void>;
  /** Makes a delivery due again now, whatever its status (the admin's redeliver); false when unknown. */
  abstract redeliver(id: string, now: Date): Promise<boolean>;
  /**
   * Pending deliveries due by `now` and not held by a live sender, oldest due first, none of `skipTriggers` nor of
   * the triggers of `skipAccounts` (those whose callbacks already have their attempts in flight in the sender: their
   * backlog cannot fill the page).
   */
  abstract listDue(now: Date, limit: number, skipTriggers?: readonly string[], skipAccounts?: readonly string[]): Promise<DueDelivery[]>;
  /** Deletes delivered and failed deliveries created before `before` (retention); returns how many. */
  abstract deleteFinishedBefore(before: Date): Promise<number>;
  /** A trigger's deliveries, newest first (without their bodies). */
  abstract listByTrigger(triggerId: string, limit: number): Promise<DeliveryRecord[]>;
  /** A run's deliveries, oldest first (without their bodies). */
  abstract listByInvocation(invocationId: string, tx?: WebhookTransaction): Promise<DeliveryRecord[]>;
}
