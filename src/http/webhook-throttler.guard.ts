import { Inject, Injectable, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ThrottlerGuard, type ThrottlerLimitDetail, type ThrottlerModuleOptions } from '@nestjs/throttler';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import { AUTHENTICATED_TRIGGER, rawRequestOf } from './http.types.js';
import { RateLimitStorage } from '../rate-limits/rate-limit.storage.js';
import { RateLimitedError } from '../errors/webhook-trigger.errors.js';

const triggerOf = (req: unknown) => rawRequestOf(req)[AUTHENTICATED_TRIGGER]!;

/**
 * @nestjs/throttler's guard with two named limits, per trigger and per owning account. It runs after
 * `TriggerKeyGuard`, so only requests with a valid key are counted: nobody without the key can spend a
 * trigger's budget. Its own options and storage are injected here rather than through ThrottlerModule,
 * which is global and would collide with the host's own ThrottlerModule.
 */
@Injectable()
export class WebhookThrottlerGuard extends ThrottlerGuard {
  constructor(
    @Inject(RESOLVED_OPTIONS) options: ResolvedWebhookTriggerOptions,
    // Explicit, because ThrottlerGuard's own @InjectThrottlerStorage() metadata is inherited.
    @Inject(RateLimitStorage) storage: RateLimitStorage,
    @Inject(Reflector) reflector: Reflector,
  ) {
    const { perTrigger, perAccount } = options.rateLimits;
    const throttlerOptions: ThrottlerModuleOptions = {
      throttlers: [
        { name: 'trigger', limit: perTrigger.limit, ttl: perTrigger.ttlMs, getTracker: (req) => triggerOf(req).id },
        { name: 'account', limit: perAccount.limit, ttl: perAccount.ttlMs, getTracker: (req) => triggerOf(req).accountId },
      ],
      setHeaders: false,
    };
    super(throttlerOptions, storage, reflector);
  }

  /** One bucket per trigger (or account) across both endpoints, not one per route handler. */
  protected override generateKey(_context: ExecutionContext, tracker: string, throttlerName: string): string {
    return `${throttlerName}:${tracker}`;
  }

  protected override async throwThrottlingException(context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    const scope = detail.key.startsWith('trigger:') ? 'trigger' : 'account';
    throw new RateLimitedError(scope, Math.max(1, detail.timeToBlockExpire));
  }
}
