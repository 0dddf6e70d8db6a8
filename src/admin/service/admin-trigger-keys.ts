import { Inject, Injectable } from '@nestjs/common';
import { ClusterBus } from '../../cluster/cluster-bus.js';
import { WebhookAdminConflictError, WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { BAD_KEY_EXPIRY, BAD_KEY_LABEL, TOO_MANY_TRIGGER_KEYS } from '../../errors/webhook-trigger.messages.js';
import { newTriggerKeyId, PLAIN_TEXT_200, TRIGGER_ID_PATTERN, TRIGGER_KEY_ID_PATTERN } from '../../keys/ids.js';
import { generateTriggerKey, hashTriggerKey, isUsableKey, MAX_USABLE_KEYS, TriggerKeyCipher } from '../../keys/trigger-keys.js';
import { RESOLVED_OPTIONS } from '../../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../../options/webhook-trigger-options.interface.js';
import type { TriggerKeyRecord, TriggerRecord } from '../../persistence/records.js';
import { type AddKeyRules, TriggerRepository } from '../../persistence/trigger.repository.js';
import { Clock } from '../../time/clock.js';
import type { CreatedTriggerKeyView, CreateTriggerKeyInput, RotatedTriggerKey, TriggerKeyView, TriggerView } from '../admin-views.js';
import { AdminAudit } from '../audit/admin-audit.js';

/**
 * A trigger's keys: list, create, revoke one, rotate (a new key; the others keep working for
 * `keyRotationGraceMs`). Times come from the module's `Clock`. Every change is announced on the cluster bus
 * before the answer, so every node's trigger cache drops the trigger. Behind `WebhookTriggersAdmin`.
 */
@Injectable()
export class AdminTriggerKeys {
  private readonly cipher: TriggerKeyCipher | null;
  private readonly graceMs: number;

  constructor(
    private readonly triggers: TriggerRepository,
    private readonly bus: ClusterBus,
    private readonly audit: AdminAudit,
    @Inject(Clock) private readonly clock: Clock,
    @Inject(RESOLVED_OPTIONS) options: ResolvedWebhookTriggerOptions,
  ) {
    this.cipher = options.keySecret ? new TriggerKeyCipher(options.keySecret) : null;
    this.graceMs = options.keyRotationGraceMs;
  }

  /**
   * A new key for a trigger (stored by the caller): its record and the plain key. Created after every key of
   * `after` (1 ms later at least), so "newest" is never a tie, even within a millisecond.
   */
  newKey(
    triggerId: string,
    label: string,
    expiresAt: Date | null = null,
    after: TriggerKeyRecord[] = [],
  ): { record: TriggerKeyRecord; key: string } {
    const key = generateTriggerKey();
    const newest = after.reduce((latest, k) => Math.max(latest, k.createdAt.getTime() + 1), 0);
    const record: TriggerKeyRecord = {
      id: newTriggerKeyId(),
      triggerId,
      label,
      keyHash: hashTriggerKey(key),
      keyCiphertext: this.cipher?.encrypt(key) ?? null,
      createdAt: new Date(Math.max(this.clock.now(), newest)),
      expiresAt,
      rotatedAt: null,
      revokedAt: null,
      lastUsedAt: null,
    };
    return { record, key };
  }

  /** The newest usable key, plain (with `keySecret`; else null): the one "View" shows. */
  shownKey(trigger: TriggerRecord): string | null {
    const now = this.clock.now();
    const newest = trigger.keys.filter((k) => isUsableKey(k, now)).at(-1);
    return newest?.keyCiphertext && this.cipher ? this.cipher.decrypt(newest.keyCiphertext) : null;
  }

  /** The trigger's keys not revoked, oldest first (expired ones marked); null when the trigger is unknown. */
  async listKeys(triggerId: string): Promise<TriggerKeyView[] | null> {
    const trigger = await this.find(triggerId);
    if (!trigger) return null;
    const now = this.clock.now();
    return trigger.keys.map((k) => this.view(k, now));
  }

  /** Adds a key; null when the trigger is unknown. Throws 400 for a bad label or expiry, 409 past `MAX_USABLE_KEYS`. */
  async createKey(triggerId: string, input: CreateTriggerKeyInput = {}): Promise<CreatedTriggerKeyView | null> {
    const trigger = await this.find(triggerId);
    if (!trigger) return null;
    const now = this.clock.now();
    const label = this.label(input?.label, trigger);
    const expiresAt = this.expiry(input?.expiresAt, now);
    const { record, key } = this.newKey(trigger.id, label, expiresAt, trigger.keys);
    if (!(await this.add(record, { now: new Date(now), maxUsable: MAX_USABLE_KEYS }))) return null;
    await this.audit.keyCreated(trigger.id, record.id);
    return { ...this.view(record, now), key };
  }

  /** Revokes one key at once (refused on every node once the bus delivered); false when unknown or already revoked. */
  async revokeKey(triggerId: string, keyId: string): Promise<boolean> {
    if (!TRIGGER_ID_PATTERN.test(triggerId) || !TRIGGER_KEY_ID_PATTERN.test(keyId)) return false;
    if (!(await this.triggers.revokeKey(triggerId, keyId, new Date(this.clock.now())))) return false;
    await this.bus.announceTriggerChanged(triggerId);
    await this.audit.keyRevoked(triggerId, keyId);
    return true;
  }

  /**
   * A new key; every other usable key keeps working until now + `keyRotationGraceMs` (never later than it
   * would have anyway; `0` ends them at once). Null when the trigger is unknown.
   */
  async rotateKey(triggerId: string, view: (trigger: TriggerRecord) => TriggerView): Promise<RotatedTriggerKey | null> {
    const trigger = await this.find(triggerId);
    if (!trigger) return null;
    const now = this.clock.now();
    const graceEndsAt = new Date(now + this.graceMs);
    const { record, key } = this.newKey(trigger.id, this.label(undefined, trigger), null, trigger.keys);
    if (!(await this.add(record, { now: new Date(now), maxUsable: MAX_USABLE_KEYS, othersExpireAt: graceEndsAt }))) return null;
    await this.audit.keyRotated(trigger.id, record.id);
    return { ...view(trigger), key, keyId: record.id, graceEndsAt };
  }

  private async find(triggerId: string): Promise<TriggerRecord | null> {
    return TRIGGER_ID_PATTERN.test(triggerId) ? this.triggers.findActive(triggerId) : null;
  }

  /** Stores the key (false when the trigger went meanwhile) and announces the change before the answer. */
  private async add(record: TriggerKeyRecord, rules: AddKeyRules): Promise<boolean> {
    const outcome = await this.triggers.addKey(record, rules);
    if (outcome === 'too_many_keys') throw new WebhookAdminConflictError(TOO_MANY_TRIGGER_KEYS(MAX_USABLE_KEYS));
    if (outcome === 'unknown_trigger') return false;
    await this.bus.announceTriggerChanged(record.triggerId);
    return true;
  }

  private label(given: unknown, trigger: TriggerRecord): string {
    if (given === undefined || given === null) return `Key ${trigger.keys.length + 1}`;
    const label = typeof given === 'string' ? given.trim() : '';
    if (!PLAIN_TEXT_200.test(label)) throw new WebhookAdminInputError(BAD_KEY_LABEL);
    return label;
  }

  private expiry(given: unknown, now: number): Date | null {
    if (given === undefined || given === null) return null;
    const ms =
      given instanceof Date ? given.getTime() : typeof given === 'string' && /^\d{4}-\d\d-\d\dT/.test(given) ? Date.parse(given) : NaN;
    if (!Number.isFinite(ms) || ms <= now) throw new WebhookAdminInputError(BAD_KEY_EXPIRY);
    return new Date(ms);
  }

  private view(k: TriggerKeyRecord, now: number): TriggerKeyView {
    return {
      id: k.id,
      label: k.label,
      createdAt: k.createdAt,
      lastUsedAt: k.lastUsedAt,
      expiresAt: k.expiresAt,
      inGrace: k.rotatedAt !== null,
      usable: isUsableKey(k, now),
    };
  }
}
