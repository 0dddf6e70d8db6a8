import { type DynamicModule, Inject, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { WebhookTriggersAdmin } from './admin/webhook-triggers.admin.js';
import { WebhookBotExplorer } from './bots/webhook-bot.explorer.js';
import { WebhookBotRegistry } from './bots/webhook-bot.registry.js';
import { CompletionBus } from './completion/completion-bus.js';
import { TriggerKeyGuard } from './http/trigger-key.guard.js';
import { WebhookBodyReader } from './http/webhook-body.reader.js';
import { WebhookThrottlerGuard } from './http/webhook-throttler.guard.js';
import { WebhookTriggerController } from './http/webhook-trigger.controller.js';
import { InvocationEvents } from './events/invocation.events.js';
import { InvocationExecutor } from './runs/invocation.executor.js';
import { InvocationService } from './invocations/invocation.service.js';
import { InvocationWaiter } from './invocations/invocation.waiter.js';
import { HistoryRetention } from './lifecycle/history-retention.js';
import { InvocationRecovery } from './lifecycle/lease-recovery.js';
import { InterruptedRuns } from './lifecycle/interrupted-runs.js';
import { ShutdownState } from './lifecycle/shutdown.state.js';
import { WebhookShutdown } from './lifecycle/graceful-shutdown.js';
import { CreditLedger } from './persistence/credit-ledger.js';
import { InvocationRepository } from './persistence/invocation.repository.js';
import { TriggerRepository } from './persistence/trigger.repository.js';
import { BotRunner } from './runs/bot-runner.js';
import { RESOLVED_OPTIONS } from './webhook-trigger.constants.js';
import {
  ConfigurableWebhookTriggerModule,
  WEBHOOK_TRIGGER_MODULE_OPTIONS,
  type WEBHOOK_TRIGGER_OPTIONS_TYPE,
} from './webhook-trigger.module-definition.js';
import { resolveWebhookTriggerOptions } from './options/resolve-options.js';

/**
 * Mounts the webhook trigger API (`POST /webhooks/:triggerId/trigger`; under
 * `/webhooks/:triggerId/trigger/invocation/:invocationId`: `GET …/sync`, `GET` (status), `POST …/cancel`)
 * and runs `@WebhookBot()` providers.
 *
 * ```ts
 * @Module({ imports: [WebhookTriggerModule.forRoot({ keySecret: process.env.KEY_SECRET })], providers: [EchoBot] })
 * ```
 */
@Module({
  imports: [DiscoveryModule],
  controllers: [WebhookTriggerController],
  providers: [
    { provide: RESOLVED_OPTIONS, inject: [WEBHOOK_TRIGGER_MODULE_OPTIONS], useFactory: resolveWebhookTriggerOptions },
    WebhookBotRegistry,
    WebhookBotExplorer,
    InvocationEvents,
    InvocationExecutor,
    InvocationService,
    InvocationWaiter,
    ShutdownState,
    InvocationRecovery,
    InterruptedRuns,
    HistoryRetention,
    WebhookShutdown,
    TriggerKeyGuard,
    WebhookThrottlerGuard,
    WebhookBodyReader,
    WebhookTriggersAdmin,
  ],
  exports: [RESOLVED_OPTIONS, WebhookTriggersAdmin, TriggerRepository, InvocationRepository, CreditLedger, BotRunner, CompletionBus],
})
export class WebhookTriggerModule extends ConfigurableWebhookTriggerModule {
  /** Options and wiring in one object; every field is optional (`forRoot()` uses the defaults). */
  static override forRoot(options: typeof WEBHOOK_TRIGGER_OPTIONS_TYPE = {}): DynamicModule {
    return super.forRoot(options);
  }
}

/** Token of the resolved options (defaults applied), for `@Inject()`. */
export const getWebhookTriggerOptionsToken = (): symbol => RESOLVED_OPTIONS;
/** Injects the resolved `ResolvedWebhookTriggerOptions`. */
export const InjectWebhookTriggerOptions = (): ParameterDecorator & PropertyDecorator => Inject(RESOLVED_OPTIONS);
