import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import { WebhookTriggerController } from './webhook-trigger.controller.js';

/**
 * @nestjs/throttler's metadata prefix and options token, by value (as its `SkipThrottle()` and
 * `ThrottlerModule` spell them), so that the module reads them without loading the package.
 */
const THROTTLER_SKIP = 'THROTTLER:SKIP';
const THROTTLER_OPTIONS = 'THROTTLER:MODULE_OPTIONS';

/**
 * Keeps a host's global `ThrottlerGuard` off the webhook routes (unless `applyHostThrottler`): what
 * `@SkipThrottle({ [name]: true })` does, for every throttler the host named in `ThrottlerModule`
 * (`SkipThrottle()` alone skips only the one named `default`). Read at startup, before any request. The
 * metadata sits on the controller class, so it is one choice per process: the last app started decides.
 */
@Injectable()
export class HostThrottlerOptOut implements OnModuleInit {
  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  onModuleInit(): void {
    const skip = !this.options.applyHostThrottler;
    for (const name of this.throttlerNames()) Reflect.defineMetadata(THROTTLER_SKIP + name, skip, WebhookTriggerController);
  }

  /** The names of the host's throttlers (`default` for an unnamed one), and `default` in any case. */
  private throttlerNames(): Set<string> {
    const names = new Set(['default']);
    let options: unknown;
    try {
      options = this.moduleRef.get(THROTTLER_OPTIONS, { strict: false });
    } catch {
      return names; // no ThrottlerModule in this app
    }
    const throttlers = Array.isArray(options) ? options : (options as { throttlers?: unknown } | undefined)?.throttlers;
    if (!Array.isArray(throttlers)) return names;
    for (const t of throttlers as Array<{ name?: unknown }>) names.add(typeof t?.name === 'string' ? t.name : 'default');
    return names;
  }
}
