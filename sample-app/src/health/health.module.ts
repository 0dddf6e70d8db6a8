import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { WebhookTriggerHealthIndicator } from '../../../src/terminus/index.js';
import { HealthController } from './health.controller.js';

/**
 * The sample's health endpoint on @nestjs/terminus (docs/observability.md, "Health"). Terminus's own log of a
 * failed check is off: the answer names what is down, and a load balancer polls it often.
 */
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  providers: [WebhookTriggerHealthIndicator],
})
export class HealthModule {}
