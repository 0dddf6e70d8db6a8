import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { WebhookTriggerHealthIndicator } from '../../../src/terminus/index.js';

/** `GET /health`: 200 with each check's details while this node can serve, 503 naming what is down. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly webhooks: WebhookTriggerHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.webhooks.isHealthy('webhooks')]);
  }
}
