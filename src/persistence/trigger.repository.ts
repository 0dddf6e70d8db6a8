import type { TriggerKeyRecord, TriggerRecord } from './records.js';

/** What `TriggerRepository.addKey` did. */
export type AddKeyOutcome = 'added' | 'unknown_trigger' | 'too_many_keys';

/** The bound and the rotation an added key comes with. */
export interface AddKeyRules {
  /** Judges which keys are usable (not revoked, not expired). */
  now: Date;
  /** Most usable keys the trigger may have once the key is added. */
  maxUsable: number;
  /**
   * A rotation: every other key usable at `now` stops at this time, unless it stops earlier already (an
   * expiry is never lengthened); those it shortens get `rotatedAt = now`. Written with the new key, at once.
   */
  othersExpireAt?: Date;
}

/** Stores triggers and their keys. Abstract class so it doubles as the DI token; the SQL class is the default. */
export abstract class TriggerRepository {
  /** The trigger with its keys that were not revoked, unless unknown or deleted. */
  abstract findActive(id: string): Promise<TriggerRecord | null>;
  /** Stores a trigger with its keys (its first key), all or nothing. */
  abstract create(trigger: TriggerRecord): Promise<void>;
  /** Active triggers of a bot, oldest first, with their keys. */
  abstract listByBot(botId: string): Promise<TriggerRecord[]>;
  /**
   * Adds a key to its trigger (`key.triggerId`) in one write with the rotation of the others, when
   * `rules.othersExpireAt` is set; nothing is written unless the answer is `added`. Counted under a lock
   * of the trigger, so concurrent adds never pass `maxUsable` together.
   */
  abstract addKey(key: TriggerKeyRecord, rules: AddKeyRules): Promise<AddKeyOutcome>;
  /** Revokes one key of an active trigger at `at`; false when unknown, of another trigger, or already revoked. */
  abstract revokeKey(triggerId: string, keyId: string, at: Date): Promise<boolean>;
  /** Sets the keys' last-used times (key id → time), in one write; a later time already stored stays. */
  abstract recordKeyUses(uses: ReadonlyMap<string, Date>): Promise<void>;
  /** Replaces the allowed addresses ([] lets every address in); false when the trigger is unknown or deleted. */
  abstract setAllowedIps(id: string, allowedIps: string[]): Promise<boolean>;
  /** Deletes (the trigger's past runs stay in history); false when unknown or already deleted. */
  abstract delete(id: string): Promise<boolean>;
  /**
   * Gives every trigger of the bot (deleted ones too) the account `accountId`, the bot's as registered now;
   * answers the ids of those whose account it changed (at startup, when a bot's account changed since).
   */
  abstract assignBotAccount(botId: string, accountId: string): Promise<string[]>;
}
