import { ConfigurableModuleBuilder, type Provider } from '@nestjs/common';
import { InMemoryClusterBus } from './cluster/in-memory-cluster.bus.js';
import { ClusterBus } from './cluster/cluster-bus.js';
import { RESOLVED_OPTIONS, WEBHOOK_TRIGGER_EXTRAS } from './options/module.constants.js';
import { resolveWebhookTriggerOptions, WEBHOOK_TRIGGER_EXTRA_NAMES } from './options/resolve-options.js';
import type { WebhookTriggerModuleOptions } from './options/webhook-trigger-options.interface.js';
import type { WebhookTriggerModuleExtras } from './webhook-trigger.extras.js';
import { webhookStorageProviders } from './persistence/storage.providers.js';
import { InMemoryRateLimitStorage } from './rate-limits/in-memory-rate-limit.storage.js';
import { RateLimitStorage } from './rate-limits/rate-limit.storage.js';
import { BotRunner } from './runs/bot-runner.js';
import { Clock, SYSTEM_CLOCK } from './time/clock.js';
import { InProcessBotRunner } from './runs/in-process.runner.js';
import { CallbackTransport, HttpCallbackTransport } from './callbacks/callback-transport.js';
import { SINGLE_INSTANCE, singleInstanceProvider } from './lifecycle/single-instance.js';

/** The callback transport the extras chose (a class or an instance), else the HTTP one. */
function callbackTransportProvider(transport: WebhookTriggerModuleExtras['callbackTransport']): Provider {
  if (transport === undefined) return { provide: CallbackTransport, useClass: HttpCallbackTransport };
  return typeof transport === 'function'
    ? { provide: CallbackTransport, useClass: transport }
    : { provide: CallbackTransport, useValue: transport };
}

/** The raw options token, before defaults (internal). */
const MODULE_OPTIONS = 'WEBHOOK_TRIGGER_MODULE_OPTIONS';

/** The providers the extras choose, with the module's own classes as fallbacks. Wiring only: checks live in resolve-options.ts. */
function wiringProviders(extras: WebhookTriggerModuleExtras): Provider[] {
  // Nest hands the transform the extras merged with everything else it was given; keep the extras only.
  const wiring = Object.fromEntries(WEBHOOK_TRIGGER_EXTRA_NAMES.map((name) => [name, extras[name]])) as WebhookTriggerModuleExtras;
  return [
    { provide: WEBHOOK_TRIGGER_EXTRAS, useValue: wiring },
    singleInstanceProvider,
    // SINGLE_INSTANCE first: every part (the database too) waits for the options, so a second instance stops before any opens.
    {
      provide: RESOLVED_OPTIONS,
      inject: [MODULE_OPTIONS, WEBHOOK_TRIGGER_EXTRAS, SINGLE_INSTANCE],
      useFactory: (raw: WebhookTriggerModuleOptions | null, chosen: WebhookTriggerModuleExtras) =>
        resolveWebhookTriggerOptions(raw, chosen),
    },
    ...webhookStorageProviders(extras.storage, extras.dataSourceName),
    { provide: BotRunner, useClass: extras.runner ?? InProcessBotRunner },
    { provide: ClusterBus, useClass: extras.clusterBus ?? InMemoryClusterBus },
    { provide: RateLimitStorage, useClass: extras.rateLimitStorage ?? InMemoryRateLimitStorage },
    { provide: Clock, useValue: extras.clock ?? SYSTEM_CLOCK },
    callbackTransportProvider(extras.callbackTransport),
  ];
}

export const {
  ConfigurableModuleClass: ConfigurableWebhookTriggerModule,
  OPTIONS_TYPE: WEBHOOK_TRIGGER_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: WEBHOOK_TRIGGER_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<WebhookTriggerModuleOptions>({ moduleName: 'WebhookTrigger', optionsInjectionToken: MODULE_OPTIONS })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createWebhookTriggerOptions')
  // Every extra is listed (undefined by default) so that Nest strips all of them from the options object.
  .setExtras<WebhookTriggerModuleExtras>(
    Object.fromEntries(WEBHOOK_TRIGGER_EXTRA_NAMES.map((name) => [name, name === 'isGlobal' ? false : undefined])),
    (definition, extras) => ({
      ...definition,
      global: extras.isGlobal,
      providers: [...(definition.providers ?? []), ...wiringProviders(extras)],
    }),
  )
  .build();

/** What `forRootAsync({ useClass | useExisting })` must implement. */
export interface WebhookTriggerOptionsFactory {
  createWebhookTriggerOptions(): Promise<WebhookTriggerModuleOptions> | WebhookTriggerModuleOptions;
}

/** Argument of `WebhookTriggerModule.forRoot()`: the options and the extras in one object. */
export type WebhookTriggerModuleForRootOptions = typeof WEBHOOK_TRIGGER_OPTIONS_TYPE;
/** Argument of `WebhookTriggerModule.forRootAsync()`: imports, inject, useFactory/useClass/useExisting and the extras. */
export type WebhookTriggerModuleAsyncOptions = typeof WEBHOOK_TRIGGER_ASYNC_OPTIONS_TYPE;
