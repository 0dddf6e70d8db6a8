import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { generateCallbackSecret } from '../../callbacks/standard-webhooks.js';
import { ClusterBus } from '../../cluster/cluster-bus.js';
import { SecretsAtRest } from '../../keys/secrets-at-rest.js';
import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { REQUEST_SIGNING_INVALID } from '../../errors/webhook-trigger.messages.js';
import { TRIGGER_ID_PATTERN } from '../../keys/ids.js';
import { RESOLVED_OPTIONS } from '../../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../../options/webhook-trigger-options.interface.js';
import { REQUEST_SIGNING_MODES, type RequestSigning, type SigningSecretRecord } from '../../persistence/records.js';
import { SigningSecretStore } from '../../persistence/signing-secret-store.js';
import { TriggerRepository } from '../../persistence/trigger.repository.js';
import { WebhookUnitOfWork } from '../../persistence/unit-of-work.js';
import { Clock } from '../../time/clock.js';
import type { RequestSigningView, RotatedSigningSecret, SigningSecretStatus, SigningSecretView } from '../admin-views.js';
import { AdminAudit } from '../audit/admin-audit.js';

/** Most secrets a trigger's view lists (newest first): a sender rotating daily for a month, and then some. */
export const SIGNING_SECRETS_LISTED = 50;
export const SIGNING_SECRET_ID_PATTERN = /^sgs_[A-Za-z0-9_-]{22}$/;

/**
 * Signed requests, for the admin: a trigger's mode, and its signing secrets (rotate with a grace, revoke at
 * once). Behind `WebhookTriggersAdmin`; one method per change. The secret is sealed as callback secrets are
 * (`SecretsAtRest`: AES-256-GCM with `keySecret`, else as is) and shown only in the rotation's answer.
 */
@Injectable()
export class AdminSigning {
  constructor(
    private readonly triggers: TriggerRepository,
    private readonly store: SigningSecretStore,
    private readonly unitOfWork: WebhookUnitOfWork,
    private readonly secrets: SecretsAtRest,
    private readonly bus: ClusterBus,
    private readonly audit: AdminAudit,
    @Inject(Clock) private readonly clock: Clock,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  async getRequestSigning(triggerId: string): Promise<RequestSigningView | null> {
    const trigger = await this.activeTrigger(triggerId);
    return trigger ? this.view(triggerId, trigger.requestSigning ?? 'off') : null;
  }

  /** Throws `WebhookAdminInputError` for a mode that is not one of `REQUEST_SIGNING_MODES`. */
  async setRequestSigning(triggerId: string, mode: unknown): Promise<RequestSigningView | null> {
    if (typeof mode !== 'string' || !(REQUEST_SIGNING_MODES as readonly string[]).includes(mode)) {
      throw new WebhookAdminInputError(REQUEST_SIGNING_INVALID(REQUEST_SIGNING_MODES));
    }
    if (!(await this.activeTrigger(triggerId)) || !(await this.store.setRequestSigning(triggerId, mode as RequestSigning))) return null;
    // Every node's cached copy of the trigger (and so its mode) is dropped.
    await this.bus.announceTriggerChanged(triggerId);
    await this.audit.requestSigningSet(triggerId, mode);
    return this.view(triggerId, mode as RequestSigning);
  }

  /**
   * A new secret (the first, or the next): the trigger's other secrets keep verifying until now +
   * `keyRotationGraceMs`, then stop. Both changes commit together.
   */
  async rotateSigningSecret(triggerId: string): Promise<RotatedSigningSecret | null> {
    const trigger = await this.activeTrigger(triggerId);
    if (!trigger) return null;
    const now = this.clock.now();
    const secret = generateCallbackSecret(32);
    const record: SigningSecretRecord = {
      id: 'sgs_' + randomBytes(16).toString('base64url'),
      triggerId,
      secret: this.secrets.seal(secret),
      createdAt: new Date(now),
      expiresAt: null,
      revokedAt: null,
    };
    await this.unitOfWork.run(async (tx) => {
      await this.store.insertSecret(record, tx);
      await this.store.expireOthers(triggerId, record.id, new Date(now + this.options.keyRotationGraceMs), tx);
    });
    await this.audit.signingSecretRotated(triggerId, record.id);
    return { id: record.id, secret, signing: await this.view(triggerId, trigger.requestSigning ?? 'off') };
  }

  /** Ends one secret at once (its grace too). Null when the trigger or the secret is unknown, or it was revoked. */
  async revokeSigningSecret(triggerId: string, secretId: string): Promise<RequestSigningView | null> {
    const trigger = await this.activeTrigger(triggerId);
    if (!trigger || typeof secretId !== 'string' || !SIGNING_SECRET_ID_PATTERN.test(secretId)) return null;
    if (!(await this.store.revokeSecret(triggerId, secretId, new Date(this.clock.now())))) return null;
    await this.audit.signingSecretRevoked(triggerId, secretId);
    return this.view(triggerId, trigger.requestSigning ?? 'off');
  }

  private async view(triggerId: string, mode: RequestSigning): Promise<RequestSigningView> {
    const now = this.clock.now();
    const listed = await this.store.listSecrets(triggerId, SIGNING_SECRETS_LISTED);
    return { mode, secrets: listed.map((s) => secretView(s, now)) };
  }

  private async activeTrigger(triggerId: string) {
    return typeof triggerId === 'string' && TRIGGER_ID_PATTERN.test(triggerId) ? this.triggers.findActive(triggerId) : null;
  }
}

/** The one place a secret record becomes a view: its status at `now`, never the secret. */
function secretView({ id, createdAt, expiresAt, revokedAt }: SigningSecretRecord, now: number): SigningSecretView {
  const status: SigningSecretStatus =
    revokedAt !== null ? 'revoked' : expiresAt === null ? 'active' : expiresAt.getTime() > now ? 'expiring' : 'expired';
  return { id, status, createdAt, expiresAt, revokedAt };
}
