import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { InvalidKeyError, RateLimitedError, UnknownTriggerError } from '../errors/webhook-trigger.errors.js';
import { TOO_MANY_FAILED_KEYS } from '../errors/webhook-trigger.messages.js';
import { TriggerCache } from '../invocations/trigger-cache.js';
import { TRIGGER_ID_PATTERN } from '../keys/ids.js';
import { TriggerKeyCheck } from './trigger-key-check.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions, WebhookRateLimit } from '../options/webhook-trigger-options.interface.js';
import type { TriggerRepository } from '../persistence/trigger.repository.js';
import type { TriggerRecord } from '../persistence/records.js';
import { RateLimitStorage, type RateLimitWindow } from '../rate-limits/rate-limit.storage.js';
import { AUTHENTICATED_TRIGGER, type RawRequest, rawRequestOf } from './http.types.js';
import { SignedRequests } from './signed-requests.js';
import { assertIpAllowed } from './ip-allow-list.js';

/** Express and Fastify both expose `ip` (honouring their trust-proxy settings); else the socket's address. */
function clientIp(request: unknown, raw: RawRequest): string {
  const ip = (request as { ip?: unknown }).ip;
  return typeof ip === 'string' && ip !== '' ? ip : (raw.socket?.remoteAddress ?? 'unknown');
}

/**
 * `:triggerId` → the trigger (404); its IP allow-list (403, `ip-allow-list.ts`); `X-Key` → any of its usable keys,
 * checked in constant time (401, `TriggerKeyCheck`; not asked when the trigger is signed `instead-of-key`); a signed
 * trigger's headers (401, `signed-requests.ts`); then the rate limits (429). Leaves the trigger on the request. Decided from the path and headers alone: the trigger's body is read
 * only after every guard passed. Once the client IP has `failedKeyLimit` failures in the window, every
 * request from it gets 429, whether its key is right or wrong, so a guesser learns nothing from it. A wrong
 * key is one atomic step (`RateLimitStorage.checkFailures`), so N concurrent wrong keys get exactly `limit`
 * answers that depend on the key, on every node. A right key is one atomic step too
 * (`RateLimitStorage.admit`): the failed-key window, then the trigger's and its account's limits, counted
 * in both only when both accept. Only requests with a right key are counted: nobody without the key can
 * spend a trigger's budget.
 *
 * The trigger comes from the module's `TriggerCache` (this process's copy, dropped on every node when a key
 * is rotated or the trigger deleted; used only with a bus that carries those changes), else the repository.
 */
@Injectable()
export class TriggerKeyGuard implements CanActivate {
  private readonly failedKeyLimit: WebhookRateLimit;
  private readonly rateLimits: ResolvedWebhookTriggerOptions['rateLimits'];

  constructor(
    // This process's copy of trigger look-ups (a plain repository in specs).
    @Inject(TriggerCache) private readonly triggers: Pick<TriggerRepository, 'findActive'>,
    private readonly limits: RateLimitStorage,
    @Inject(RESOLVED_OPTIONS) options: ResolvedWebhookTriggerOptions,
    private readonly keys: TriggerKeyCheck,
    private readonly signedRequests: SignedRequests,
  ) {
    this.failedKeyLimit = options.failedKeyLimit;
    this.rateLimits = options.rateLimits;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<{ params: Record<string, string> }>();
    const triggerId = request.params.triggerId;
    // An id that cannot exist is not worth a query.
    const trigger = TRIGGER_ID_PATTERN.test(triggerId) ? await this.triggers.findActive(triggerId) : null;
    if (!trigger) throw new UnknownTriggerError(triggerId);
    const raw = rawRequestOf(request);
    const ip = clientIp(request, raw);
    assertIpAllowed(trigger.allowedIps, ip); // 403 before the key, the limits and the body
    const failures = { key: `failed-key:${ip}`, ttl: this.failedKeyLimit.ttlMs, limit: this.failedKeyLimit.limit };
    // Signed requests (signed-requests.ts): the trigger's requestSigning decides whether X-Key is asked (not in
    // `instead-of-key` mode, where the signature is the credential) and whether the request is counted now or once
    // its body's signature verified. The key is judged first: a wrong key learns nothing of the trigger's signing.
    const signing = this.signedRequests.signingOf(trigger, context.getHandler());
    if (signing !== 'instead-of-key') {
      const presented = raw.headers['x-key']; // Node lower-cases header names: any spelling works
      const missing = typeof presented !== 'string' || presented === '';
      if (missing || !this.keys.check(trigger, presented)) await this.refuseKey(failures, missing);
    }
    if (signing !== 'off') {
      await this.signedRequests.beforeBody(trigger, raw, signing === 'instead-of-key', failures, () => this.admit(failures, trigger));
    }
    if (signing !== 'instead-of-key') await this.admit(failures, trigger);
    raw[AUTHENTICATED_TRIGGER] = trigger;
    return true;
  }

  /** A missing or wrong key: counted as a failure for the client IP; 429 once its window is full, else 401. */
  private async refuseKey(failures: RateLimitWindow, missing: boolean): Promise<never> {
    const wait = await this.limits.checkFailures(failures.key, failures.ttl, failures.limit, true);
    if (wait > 0) throw new RateLimitedError('client', wait, TOO_MANY_FAILED_KEYS);
    throw new InvalidKeyError(missing);
  }

  /**
   * One bucket per trigger (its trigger, sync, status, events and cancel requests together) and one per
   * account (all of its triggers together), in the same storage call as the failed-key check.
   */
  private async admit(failures: RateLimitWindow, trigger: TriggerRecord): Promise<void> {
    const { perTrigger, perAccount } = this.rateLimits;
    const { refusedBy, retryAfterSeconds } = await this.limits.admit({
      failures,
      limits: [
        { name: 'trigger', key: `trigger:${trigger.id}`, ttl: perTrigger.ttlMs, limit: perTrigger.limit },
        { name: 'account', key: `account:${trigger.accountId}`, ttl: perAccount.ttlMs, limit: perAccount.limit },
      ],
    });
    if (refusedBy === 'failures') throw new RateLimitedError('client', retryAfterSeconds, TOO_MANY_FAILED_KEYS);
    if (refusedBy) throw new RateLimitedError(refusedBy, retryAfterSeconds);
  }
}
