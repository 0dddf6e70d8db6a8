import { type DynamicModule, type FactoryProvider, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ADMIN_SERVICE_PROVIDERS, WebhookTriggersAdmin } from './admin/webhook-triggers.admin.js';
import { CallbackOutbox } from './deliveries/callback-outbox.js';
import { CallbackDeliveries } from './lifecycle/callback-deliveries.js';
import { RunFinisher } from './deliveries/run-finisher.js';
import { WebhookStorage } from './persistence/webhook-storage.js';
import { WebhookBotExplorer } from './bots/webhook-bot.explorer.js';
import { WebhookBotRegistry } from './bots/webhook-bot.registry.js';
import { ClusterBus } from './cluster/cluster-bus.js';
import { InvocationEvents } from './events/invocation.events.js';
import { hostEventEmitterProvider } from './events/host-event-emitter.js';
import { EventListenersHint } from './events/event-listeners-hint.js';
import { WebhookBodyCapture } from './http/body-capture/webhook-body-capture.js';
import { TriggerKeyGuard } from './http/trigger-key.guard.js';
import { TriggerKeyCheck } from './http/trigger-key-check.js';
import { SignedRequests } from './http/signed-requests.js';
import { HostThrottlerOptOut } from './http/host-throttler.js';
import { WebhookTriggerController } from './http/webhook-trigger.controller.js';
import { InvocationService } from './invocations/invocation.service.js';
import { InvocationWaiter } from './invocations/invocation.waiter.js';
import { InvocationChanges } from './invocations/invocation-changes.js';
import { TriggerCache } from './invocations/trigger-cache.js';
import { RunEventStreams } from './http/run-event-streams.js';
import { GracefulShutdown } from './lifecycle/graceful-shutdown.js';
import { StartupHints } from './lifecycle/startup-hints.js';
import { AdminScreensPaths } from './lifecycle/admin-screens-paths.js';
import { HistoryRetention } from './lifecycle/history-retention.js';
import { InterruptedRuns } from './lifecycle/interrupted-runs.js';
import { LeaseRecovery } from './lifecycle/lease-recovery.js';
import { DispatchRetries } from './runs/dispatch-retries.js';
import { RunBacklog } from './runs/run-backlog.js';
import { OpenAccounts } from './lifecycle/open-accounts.js';
import { TriggerAccounts } from './lifecycle/trigger-accounts.js';
import { ShutdownState } from './lifecycle/shutdown.state.js';
import { WebhookTriggerProbes } from './lifecycle/webhook-trigger-probes.js';
import { SecretsAtRest } from './keys/secrets-at-rest.js';
import { Clock } from './time/clock.js';
import { RESOLVED_OPTIONS } from './options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from './options/webhook-trigger-options.interface.js';
import { CreditAccounts } from './persistence/credit-accounts.js';
import { CreditLedger } from './persistence/credit-ledger.js';
import { InvocationRepository } from './persistence/invocation.repository.js';
import { TriggerRepository } from './persistence/trigger.repository.js';
import { BotRunner } from './runs/bot-runner.js';
import { InvocationExecutor } from './runs/invocation.executor.js';
import { WebhookMetrics, webhookMetricsProvider } from './telemetry/webhook-metrics.js';
import { ConfigurableWebhookTriggerModule, type WebhookTriggerModuleForRootOptions } from './webhook-trigger.module-definition.js';

/** Token of the wiring that hands the process gauges their counts (each count is read from the part that holds it). */
const PROCESS_GAUGES = Symbol('WEBHOOK_TRIGGER_PROCESS_GAUGES');
const processGaugesProvider: FactoryProvider<void> = {
  provide: PROCESS_GAUGES,
  inject: [WebhookMetrics, RunBacklog, InvocationExecutor, InvocationWaiter, RunEventStreams],
  useFactory: (
    metrics: WebhookMetrics,
    runBacklog: RunBacklog,
    executor: InvocationExecutor,
    waiter: InvocationWaiter,
    streams: RunEventStreams,
  ) =>
    metrics.observeProcess({
      backlog: () => runBacklog.count(), // what `maxQueuedRuns` bounds, as the trigger's refusal counts it
      running: () => executor.runningCount,
      syncWaiters: () => waiter.waiting,
      eventStreams: () => streams.count,
    }),
};

/** Callback and signing secrets at rest, sealed with `keySecret` when the host set one. */
const secretsAtRestProvider: FactoryProvider<SecretsAtRest> = {
  provide: SecretsAtRest,
  inject: [RESOLVED_OPTIONS],
  useFactory: (options: ResolvedWebhookTriggerOptions) => new SecretsAtRest(options.keySecret),
};

/**
 * Mounts the webhook trigger API (`POST /webhooks/:triggerId/trigger`; under
 * `/webhooks/:triggerId/trigger/invocation/:invocationId`: `GET …/sync`, `GET` (status), `POST …/cancel`,
 * `GET …/events`)
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
    WebhookBotRegistry,
    WebhookBotExplorer,
    InvocationEvents,
    hostEventEmitterProvider(),
    EventListenersHint,
    InvocationExecutor,
    DispatchRetries,
    RunBacklog,
    InvocationService,
    InvocationWaiter,
    InvocationChanges,
    TriggerCache,
    RunEventStreams,
    ShutdownState,
    LeaseRecovery,
    InterruptedRuns,
    HistoryRetention,
    GracefulShutdown,
    StartupHints,
    AdminScreensPaths,
    OpenAccounts,
    TriggerAccounts,
    TriggerKeyGuard,
    TriggerKeyCheck,
    SignedRequests,
    HostThrottlerOptOut,
    WebhookBodyCapture,
    ...ADMIN_SERVICE_PROVIDERS,
    secretsAtRestProvider,
    CallbackOutbox,
    RunFinisher,
    CallbackDeliveries,
    webhookMetricsProvider,
    processGaugesProvider,
    WebhookTriggerProbes,
  ],
  exports: [
    RESOLVED_OPTIONS,
    WebhookTriggersAdmin,
    WebhookStorage,
    TriggerRepository,
    InvocationRepository,
    CreditLedger,
    CreditAccounts,
    BotRunner,
    ClusterBus,
    WebhookTriggerProbes,
    // A bot that waits (polls, backs off) injects it, so that its waits are on the module's time: a test moves them.
    Clock,
  ],
})
export class WebhookTriggerModule extends ConfigurableWebhookTriggerModule {
  /** Options and wiring in one object; every field is optional (`forRoot()` uses the defaults). */
  static override forRoot(options: WebhookTriggerModuleForRootOptions = {}): DynamicModule {
    return super.forRoot(options);
  }
}
