import { type ArgumentsHost, Catch, Controller, type ExceptionFilter, Get, ServiceUnavailableException, UseFilters } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { WebhookTriggerHealthIndicator } from '../../../src/terminus/index.js';

/**
 * Terminus answers "down" by throwing a 503 whose body is the health result: passed on as it is, so the app's
 * global JSON filter (which keeps only a message) does not hide which check is down.
 */
@Catch(ServiceUnavailableException)
class HealthResultFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: ServiceUnavailableException, host: ArgumentsHost): void {
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), exception.getResponse(), exception.getStatus());
  }
}

/** `GET /health`: 200 with each check's details while this node can serve, 503 naming what is down. */
@Controller('health')
@UseFilters(HealthResultFilter)
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
