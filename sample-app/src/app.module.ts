import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { WebhookTriggerModule } from '../../src/index.js';
import { AdminApiController } from './admin/admin-api.controller.js';
import { ADMIN_PAGE, AdminPageController, loadAdminPage } from './admin/admin-page.controller.js';
import { AdminTokenGuard } from './admin/admin-token.guard.js';
import { SAMPLE_BOTS } from './bots.js';
import { type SampleConfig, webhookExtras, webhookOptions } from './config.js';
import { DemoSeeder } from './demo-seeder.js';
import { InvocationLogger } from './invocation-logger.js';
import { JsonExceptionFilter } from './json-exception.filter.js';
import { SAMPLE_CONFIG } from './tokens.js';

@Module({})
export class AppModule {
  static forRoot(config: SampleConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        // Before the webhook module, so its (optional) EventEmitter2 is there to emit invocation events.
        EventEmitterModule.forRoot(),
        WebhookTriggerModule.forRoot({ ...webhookOptions(config), ...webhookExtras(config) }),
      ],
      controllers: [AdminApiController, AdminPageController],
      providers: [
        { provide: SAMPLE_CONFIG, useValue: config },
        { provide: ADMIN_PAGE, useFactory: loadAdminPage },
        { provide: APP_FILTER, useClass: JsonExceptionFilter },
        AdminTokenGuard,
        DemoSeeder,
        InvocationLogger,
        ...SAMPLE_BOTS,
      ],
    };
  }
}
