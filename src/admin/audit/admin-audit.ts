import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { LOG_AUDIT_WRITE_FAILED } from '../../errors/webhook-trigger.messages.js';
import { LOG_CONTEXT } from '../../options/module.constants.js';
import { type AuditDetails, AuditLog } from '../../persistence/audit-log.js';
import { Clock } from '../../time/clock.js';
import { AuditContext } from './audit-context.js';
import type { AuditAction } from './audit-views.js';

/** Longest text value kept in an entry's details. */
const DETAIL_TEXT_MAX = 200;

interface Subject {
  triggerId?: string | null;
  invocationId?: string | null;
  accountId?: string | null;
}

/**
 * Writes the audit log: one method, and one line, per admin change or key view, called by the admin service
 * after the change succeeded. Who did it comes from `AuditContext`. Details are small and never hold a key,
 * a secret or a callback URL's path or query (only its origin).
 *
 * An entry is written after its change, not in the same transaction (the stores' changes commit on their own):
 * a failed write is logged as an error naming the action, and the change's answer stands (the change happened;
 * failing the call would invite a retry that rotates or charges twice). See docs/security.md.
 */
let written = 0;
/**
 * `aud_` + 32 hex digits: a counter of this process (8), then random (24). The log lists newest first by
 * `(at, id)`, so two entries written here in the same millisecond keep the order they were written in.
 */
function nextAuditId(): string {
  written = (written + 1) % 0x1_0000_0000;
  return `aud_${written.toString(16).padStart(8, '0')}${randomBytes(12).toString('hex')}`;
}

@Injectable()
export class AdminAudit {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly log: AuditLog,
    @Inject(Clock) private readonly clock: Clock,
  ) {}

  triggerCreated = (t: { id: string; accountId: string; botId: string; name: string }) =>
    this.record('trigger.created', { triggerId: t.id, accountId: t.accountId }, { botId: t.botId, name: t.name });
  keyViewed = (triggerId: string) => this.record('trigger.key_viewed', { triggerId });
  keyRotated = (triggerId: string, keyId?: string) => this.record('trigger.key_rotated', { triggerId }, keyId ? { keyId } : {});
  keyCreated = (triggerId: string, keyId: string) => this.record('trigger.key_created', { triggerId }, { keyId });
  keyRevoked = (triggerId: string, keyId: string) => this.record('trigger.key_revoked', { triggerId }, { keyId });
  requestSigningSet = (triggerId: string, mode: string) => this.record('trigger.request_signing_set', { triggerId }, { mode });
  signingSecretRotated = (triggerId: string, secretId: string) =>
    this.record('trigger.signing_secret_rotated', { triggerId }, { secretId });
  signingSecretRevoked = (triggerId: string, secretId: string) =>
    this.record('trigger.signing_secret_revoked', { triggerId }, { secretId });
  triggerDeleted = (triggerId: string) => this.record('trigger.deleted', { triggerId });
  allowedIpsSet = (triggerId: string, allowedIps: string[]) =>
    this.record('trigger.allowed_ips_set', { triggerId }, { entries: allowedIps.length });
  callbackSet = (triggerId: string, created: boolean, url: string, events: string[]) =>
    this.record(created ? 'callback.created' : 'callback.changed', { triggerId }, { origin: originOf(url), events: events.join(',') });
  callbackDeleted = (triggerId: string) => this.record('callback.deleted', { triggerId });
  callbackSecretRotated = (triggerId: string) => this.record('callback.secret_rotated', { triggerId });
  redelivered = (deliveryId: string) => this.record('delivery.redelivered', {}, { deliveryId });
  creditsSet = (accountId: string, credits: number, previous: number | null) =>
    this.record('credits.set', { accountId }, { credits, previous });
  runCancelled = (run: { id: string; triggerId: string; accountId: string }) =>
    this.record('invocation.cancelled', { invocationId: run.id, triggerId: run.triggerId, accountId: run.accountId });
  runReplayed = (from: { id: string; triggerId: string; accountId: string }, newId: string) =>
    this.record(
      'invocation.replayed',
      { invocationId: newId, triggerId: from.triggerId, accountId: from.accountId },
      { replayOf: from.id },
    );

  private async record(action: AuditAction, subject: Subject, details: AuditDetails = {}): Promise<void> {
    try {
      await this.log.append({
        id: nextAuditId(),
        at: new Date(this.clock.now()),
        action,
        triggerId: subject.triggerId ?? null,
        invocationId: subject.invocationId ?? null,
        accountId: subject.accountId ?? null,
        principal: AuditContext.principal(),
        details: bounded(details),
      });
    } catch (error) {
      this.logger.error(LOG_AUDIT_WRITE_FAILED(action, error instanceof Error ? error.message : String(error)));
    }
  }
}

/** Text values cut to DETAIL_TEXT_MAX characters: with a handful of fields, an entry stays well under its column's 2,000. */
function bounded(details: AuditDetails): AuditDetails {
  return Object.fromEntries(
    Object.entries(details).map(([key, value]) => [key, typeof value === 'string' ? value.slice(0, DETAIL_TEXT_MAX) : value]),
  );
}

/** `https://hooks.example.com` of a callback URL: no credentials, path or query (they may carry a token). */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}
