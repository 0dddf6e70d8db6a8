import type { TriggerRecord } from './records.js';

/** Stores triggers. Abstract class so it doubles as the DI token; the TypeORM class is the default. */
export abstract class TriggerRepository {
  /** The trigger, unless unknown or deleted. */
  abstract findActive(id: string): Promise<TriggerRecord | null>;
  abstract create(trigger: TriggerRecord): Promise<void>;
  /** Active triggers of a bot, oldest first. */
  abstract listByBot(botId: string): Promise<TriggerRecord[]>;
  /** Replaces the key; false when the trigger is unknown or deleted. */
  abstract replaceKey(id: string, keyHash: string, keyCiphertext: string | null): Promise<boolean>;
  /** Replaces the allowed addresses ([] lets every address in); false when the trigger is unknown or deleted. */
  abstract setAllowedIps(id: string, allowedIps: string[]): Promise<boolean>;
  /** Deletes (the trigger's past runs stay in history); false when unknown or already deleted. */
  abstract delete(id: string): Promise<boolean>;
}
