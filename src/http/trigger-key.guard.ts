import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { ResolvedWebhookTriggerOptions, WebhookRateLimit } from '../options/webhook-trigger-options.interface.js';
import { verifyTriggerKey } from '../keys/trigger-keys.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import { TRIGGER_ID_PATTERN } from '../keys/ids.js';
import { AUTHENTICATED_TRIGGER, type RawRequest, rawRequestOf } from './http.types.js';
import { InvalidKeyError, RateLimitedError, UnknownTriggerError } from '../errors/webhook-trigger.errors.js';
import { TOO_MANY_FAILED_KEYS } from '../errors/webhook-trigger.messages.js';
import { RateLimitStorage } from '../rate-limits/rate-limit.storage.js';

/** Express and Fastify both expose `ip` (honouring their trust-proxy settings); else the socket's address. */
function clientIp(request: unknown, raw: RawRequest): string {
  const ip = (request as { ip?: unknown }).ip;
  return typeof ip === 'string' && ip !== '' ? ip : (raw.socket?.remoteAddress ?? 'unknown');
}

/**
 * `:triggerId` → the trigger (404), `X-Key` → checked in constant time (401); leaves the trigger on the
 * request. A client IP with too many failed key checks gets 429 before its key is even looked at:
 * refusing only wrong keys would still tell a guesser when it found the right one.
 */
@Injectable()
export class TriggerKeyGuard implements CanActivate {
  private readonly failedKeyLimit: WebhookRateLimit;

  constructor(
    private readonly triggers: TriggerRepository,
    private readonly failures: RateLimitStorage,
    @Inject(RESOLVED_OPTIONS) options: ResolvedWebhookTriggerOptions,
  ) {
    this.failedKeyLimit = options.failedKeyLimit;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<{ params: Record<string, string> }>();
    const triggerId = request.params.triggerId;
    // An id that cannot exist is not worth a query.
    const trigger = TRIGGER_ID_PATTERN.test(triggerId) ? await this.triggers.findActive(triggerId) : null;
    if (!trigger) throw new UnknownTriggerError(triggerId);
    const raw = rawRequestOf(request);
    const presented = raw.headers['x-key']; // Node lower-cases header names: any spelling works
    const { limit, ttlMs } = this.failedKeyLimit;
    const tracker = `failed-key:${clientIp(request, raw)}`;
    const wait = await this.failures.retryAfter(tracker, ttlMs, limit);
    if (wait > 0) throw new RateLimitedError('client', wait, TOO_MANY_FAILED_KEYS);
    const missing = typeof presented !== 'string' || presented === '';
    if (missing || !verifyTriggerKey(presented, trigger.keyHash)) {
      await this.failures.increment(tracker, ttlMs, limit);
      throw new InvalidKeyError(missing);
    }
    raw[AUTHENTICATED_TRIGGER] = trigger;
    return true;
  }
}
