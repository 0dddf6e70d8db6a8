import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { PROBES_NOT_FOUND } from '../errors/webhook-trigger.messages.js';
import { WebhookTriggerProbes, type ProbeResult } from '../lifecycle/webhook-trigger-probes.js';

/**
 * The webhook module's health for `@nestjs/terminus` (11 or 12): up when every check of
 * `WebhookTriggerProbes` is, each named in the details (`database`, `redis`, `backlog`, `workers`).
 *
 * ```ts
 * @Module({ imports: [TerminusModule], controllers: [HealthController], providers: [WebhookTriggerHealthIndicator] })
 * // in HealthController: @Get('health') @HealthCheck() check() { return this.health.check([() => this.webhooks.isHealthy('webhooks')]); }
 * ```
 */
@Injectable()
export class WebhookTriggerHealthIndicator implements OnModuleInit {
  private probes?: WebhookTriggerProbes;

  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly moduleRef: ModuleRef,
  ) {}

  /**
   * Found across modules (as the admin module finds its service): the host's health module need not import
   * the webhook module, which is global only with `isGlobal`.
   */
  onModuleInit(): void {
    try {
      this.probes = this.moduleRef.get(WebhookTriggerProbes, { strict: false });
    } catch {
      throw new WebhookConfigurationError(PROBES_NOT_FOUND);
    }
  }

  /** Checks this node now; `key` names the result (e.g. `'webhooks'`). */
  async isHealthy<const Key extends string>(key: Key): Promise<HealthIndicatorResult<Key>> {
    const indicator = this.indicators.check(key);
    const health = await this.probes!.check();
    const details: Record<string, ProbeResult> = health.checks;
    return health.status === 'up' ? indicator.up(details) : indicator.down(details);
  }
}
