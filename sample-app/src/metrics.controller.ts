import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { PROMETHEUS_CONTENT_TYPE, prometheusText } from './telemetry.js';

/**
 * `GET /metrics`: the process's metrics for a Prometheus scrape. Open, like a health check: it shows counts
 * by bot and status, never keys, inputs or accounts; keep it off the public internet with a network rule.
 */
@ApiExcludeController()
@Controller('metrics')
export class MetricsController {
  @Get()
  @Header('Content-Type', PROMETHEUS_CONTENT_TYPE)
  @Header('Cache-Control', 'no-store')
  scrape(): Promise<string> {
    return prometheusText();
  }
}
