import { type CanActivate, type ExecutionContext, Inject, Injectable, NotFoundException, UnauthorizedException } from '@nestjs/common';
import type { ResolvedWebhookTriggerOptions, WebhookRateLimit } from '../options/webhook-trigger-options.interface.js';
import { verifyTriggerKey } from '../keys/trigger-keys.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';
import { RESOLVED_OPTIONS, TRIGGER_ID_PATTERN } from '../webhook-trigger.constants.js';
import { INVALID_KEY, MISSING_KEY, TOO_MANY_FAILED_KEYS, UNKNOWN_TRIGGER } from '../errors/webhook-trigger.messages.js';
import { AUTHENTICATED_TRIGGER, type RawRequest, rawRequestOf } from './http.types.js';
import { RateLimitStorage } from '../rate-limits/rate-limit.storage.js';
import { WebhookThrottledException } from '../errors/webhook-throttled.exception.js';

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
    if (!trigger) throw new NotFoundException(UNKNOWN_TRIGGER(String(triggerId).slice(0, 64)));
    const raw = rawRequestOf(request);
    const presented = raw.headers['x-key']; // Node lower-cases header names: any spelling works
    const { limit, ttlMs } = this.failedKeyLimit;
    const tracker = `failed-key:${clientIp(request, raw)}`;
    const wait = await this.failures.retryAfter(tracker, ttlMs, limit);
    if (wait > 0) throw new WebhookThrottledException('client', wait, TOO_MANY_FAILED_KEYS);
    if (typeof presented !== 'string' || presented === '' || !verifyTriggerKey(presented, trigger.keyHash)) {
      await this.failures.increment(tracker, ttlMs, limit);
      throw new UnauthorizedException(typeof presented !== 'string' || presented === '' ? MISSING_KEY : INVALID_KEY);
    }
    raw[AUTHENTICATED_TRIGGER] = trigger;
    return true;
  }
}
