import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { WebhookTriggerAdminModule, WebhookTriggerModule } from '../../src/index.js';
import { AdminAuthModule } from './admin/admin-auth.module.js';
import { AdminGuard } from './admin/admin.guard.js';
import { SAMPLE_BOTS } from './bots.js';
import { type SampleConfig, webhookExtras, webhookOptions } from './config.js';
import { DemoSeeder } from './demo-seeder.js';
import { HealthModule } from './health/health.module.js';
import { InvocationLogger } from './invocation-logger.js';
import { JsonExceptionFilter } from './json-exception.filter.js';
import { MetricsController } from './metrics.controller.js';
import { RootController } from './root.controller.js';

@Module({})
export class AppModule {
  static forRoot(config: SampleConfig): DynamicModule {
    // One instance, imported here (the sign-in routes) and by the admin module (its guard's dependencies),
    // so the guard and the sign-in form count wrong tokens together.
    const adminAuth = AdminAuthModule.forRoot({
      adminToken: config.adminToken,
      redisUrl: config.redisUrl,
      redisKeyPrefix: config.redisKeyPrefix,
    });
    return {
      module: AppModule,
      imports: [
        // Before the webhook module, so its (optional) EventEmitter2 is there to emit invocation events.
        EventEmitterModule.forRoot(),
        WebhookTriggerModule.forRoot({ ...webhookOptions(config), ...webhookExtras(config) }),
        adminAuth,
        // The library's screens and JSON API at /admin and /admin/api (docs/admin.md), behind the sample's sign-in.
        WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [AdminGuard], imports: [adminAuth], signOutPath: '/admin/sign-out' }),
        // GET /health (terminus): database, Redis, backlog and, on API nodes, workers.
        HealthModule,
      ],
      controllers: [RootController, MetricsController],
      providers: [{ provide: APP_FILTER, useClass: JsonExceptionFilter }, DemoSeeder, InvocationLogger, ...SAMPLE_BOTS],
    };
  }
}
