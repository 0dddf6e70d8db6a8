import { type CanActivate, type ExecutionContext, Inject, Injectable, Optional } from '@nestjs/common';
import { InvalidKeyError, RateLimitedError, UnknownTriggerError } from '../errors/webhook-trigger.errors.js';
import { TOO_MANY_FAILED_KEYS } from '../errors/webhook-trigger.messages.js';
import { TriggerCache } from '../invocations/trigger-cache.js';
import { TRIGGER_ID_PATTERN } from '../keys/ids.js';
import { verifyTriggerKey } from '../keys/trigger-keys.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions, WebhookRateLimit } from '../options/webhook-trigger-options.interface.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';
import { RateLimitStorage } from '../rate-limits/rate-limit.storage.js';
import { AUTHENTICATED_TRIGGER, type RawRequest, rawRequestOf } from './http.types.js';

/** Express and Fastify both expose `ip` (honouring their trust-proxy settings); else the socket's address. */
function clientIp(request: unknown, raw: RawRequest): string {
  const ip = (request as { ip?: unknown }).ip;
  return typeof ip === 'string' && ip !== '' ? ip : (raw.socket?.remoteAddress ?? 'unknown');
}

/**
 * `:triggerId` → the trigger (404), `X-Key` → checked in constant time (401); leaves the trigger on the
 * request. Decided from the path and headers alone: the trigger's body is read only after every guard
 * passed. The failed-key limit per client IP is one atomic step after the key is judged
 * (`RateLimitStorage.checkFailures`): once the IP has `limit` failures in the window, every request from
 * it gets 429, whether its key is right or wrong, so a guesser learns nothing from it; and N concurrent
 * wrong keys get exactly `limit` answers that depend on the key, on every node.
 *
 * The trigger comes from the module's `TriggerCache` (this process's copy, dropped on every node when a key
 * is rotated or the trigger deleted; used only with a bus that carries those changes), else the repository.
 */
@Injectable()
export class TriggerKeyGuard implements CanActivate {
  private readonly failedKeyLimit: WebhookRateLimit;
  private readonly triggers: Pick<TriggerRepository, 'findActive'>;

  constructor(
    repository: TriggerRepository,
    private readonly failures: RateLimitStorage,
    @Inject(RESOLVED_OPTIONS) options: ResolvedWebhookTriggerOptions,
    @Optional() cache?: TriggerCache,
  ) {
    this.failedKeyLimit = options.failedKeyLimit;
    this.triggers = cache ?? repository;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<{ params: Record<string, string> }>();
    const triggerId = request.params.triggerId;
    // An id that cannot exist is not worth a query.
    const trigger = TRIGGER_ID_PATTERN.test(triggerId) ? await this.triggers.findActive(triggerId) : null;
    if (!trigger) throw new UnknownTriggerError(triggerId);
    const raw = rawRequestOf(request);
    const presented = raw.headers['x-key']; // Node lower-cases header names: any spelling works
    const missing = typeof presented !== 'string' || presented === '';
    const valid = !missing && verifyTriggerKey(presented, trigger.keyHash);
    const { limit, ttlMs } = this.failedKeyLimit;
    const wait = await this.failures.checkFailures(`failed-key:${clientIp(request, raw)}`, ttlMs, limit, !valid);
    if (wait > 0) throw new RateLimitedError('client', wait, TOO_MANY_FAILED_KEYS);
    if (!valid) throw new InvalidKeyError(missing);
    raw[AUTHENTICATED_TRIGGER] = trigger;
    return true;
  }
}
