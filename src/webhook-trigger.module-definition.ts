import { ConfigurableModuleBuilder, type Provider, type Type } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { CompletionBus } from './completion/completion-bus.js';
import { InMemoryCompletionBus } from './completion/in-memory-completion.bus.js';
import { RateLimitStorage } from './rate-limits/rate-limit.storage.js';
import { SlidingWindowThrottlerStorage } from './rate-limits/in-memory-rate-limit.storage.js';
import type { ResolvedWebhookTriggerOptions, WebhookTriggerModuleOptions } from './options/webhook-trigger-options.interface.js';
import { CreditLedger } from './persistence/credit-ledger.js';
import { InvocationRepository } from './persistence/invocation.repository.js';
import { TriggerRepository } from './persistence/trigger.repository.js';
import { TypeOrmCreditLedger } from './persistence/sql/sql-credit-ledger.js';
import { TypeOrmInvocationRepository } from './persistence/sql/sql-invocation.repository.js';
import { TypeOrmTriggerRepository } from './persistence/sql/sql-trigger.repository.js';
import { TypeOrmUnitOfWork } from './persistence/sql/sql-executor.js';
import { checkHostDataSource, openOwnedDataSource, OwnedDataSourceCloser } from './persistence/typeorm/webhook-data-source.js';
import { WebhookUnitOfWork } from './persistence/unit-of-work.js';
import { BotRunner } from './runs/bot-runner.js';
import { InProcessBotRunner } from './runs/in-process.runner.js';
import { RESOLVED_OPTIONS, WEBHOOK_DATA_SOURCE } from './webhook-trigger.constants.js';
import { INVALID_OPTION } from './errors/webhook-trigger.messages.js';

/**
 * Wiring decided when the module is imported (also on `forRootAsync`), because Nest must know which
 * classes to instantiate before any async options exist.
 */
export interface WebhookTriggerModuleExtras {
  /** Register the module globally. @default false */
  isGlobal?: boolean;
  /**
   * Use the DataSource your `TypeOrmModule.forRoot()` registered under this name (`'default'` for the
   * unnamed one) instead of opening one. It must list `WEBHOOK_TRIGGER_ENTITIES` in `entities` and run
   * `WEBHOOK_TRIGGER_MIGRATIONS` (e.g. `migrations: [...]`, `migrationsRun: true`).
   * @default undefined (the module opens its own database: see the `database` option)
   */
  dataSourceName?: string;
  /** Replace the trigger store. @default TypeOrmTriggerRepository */
  triggerRepository?: Type<TriggerRepository>;
  /** Replace the invocation store. @default TypeOrmInvocationRepository */
  invocationRepository?: Type<InvocationRepository>;
  /** Replace credit accounting, e.g. with your billing. @default TypeOrmCreditLedger */
  creditLedger?: Type<CreditLedger>;
  /** Replace the transaction boundary around the stores. @default TypeOrmUnitOfWork */
  unitOfWork?: Type<WebhookUnitOfWork>;
  /**
   * Replace where runs execute, e.g. `BullMqBotRunner` (needs the `redis` option and `bullmq`) to run
   * bots on worker processes; see the `role` option. @default InProcessBotRunner (in this process)
   */
  runner?: Type<BotRunner>;
  /** Replace how "run finished" reaches waiting sync requests. @default InMemoryCompletionBus */
  completionBus?: Type<CompletionBus>;
  /**
   * Replace where rate limits are counted, e.g. `RedisRateLimitStorage` (needs the `redis` option) so
   * the limits hold across all API processes together. @default SlidingWindowThrottlerStorage (in process)
   */
  rateLimitStorage?: Type<RateLimitStorage>;
}

/** The raw options token, before defaults (internal). */
const MODULE_OPTIONS = 'WEBHOOK_TRIGGER_MODULE_OPTIONS';

function dataSourceProvider(dataSourceName: string | undefined): Provider[] {
  if (dataSourceName !== undefined) {
    if (typeof dataSourceName !== 'string' || dataSourceName === '') throw new Error(INVALID_OPTION('dataSourceName', 'expected a non-empty string'));
    return [
      OwnedDataSourceCloser,
      {
        provide: WEBHOOK_DATA_SOURCE,
        inject: [getDataSourceToken(dataSourceName === 'default' ? undefined : dataSourceName), MODULE_OPTIONS],
        useFactory: (dataSource: DataSource, raw: WebhookTriggerModuleOptions) => {
          if (raw?.database !== undefined) {
            throw new Error(INVALID_OPTION('database', 'set either "dataSourceName" (the host\'s DataSource) or "database", not both'));
          }
          return checkHostDataSource(dataSource, dataSourceName);
        },
      },
    ];
  }
  return [
    OwnedDataSourceCloser,
    {
      provide: WEBHOOK_DATA_SOURCE,
      inject: [RESOLVED_OPTIONS, OwnedDataSourceCloser],
      useFactory: async (options: ResolvedWebhookTriggerOptions, closer: OwnedDataSourceCloser) => {
        const dataSource = await openOwnedDataSource(options);
        closer.own(dataSource);
        return dataSource;
      },
    },
  ];
}

function wiringProviders(extras: WebhookTriggerModuleExtras): Provider[] {
  return [
    ...dataSourceProvider(extras.dataSourceName),
    TypeOrmUnitOfWork,
    // useExisting, not useClass: the TypeORM stores and the service must share ONE instance (one
    // AsyncLocalStorage, one SQLite queue), or the stores would not see the service's transaction.
    extras.unitOfWork ? { provide: WebhookUnitOfWork, useClass: extras.unitOfWork } : { provide: WebhookUnitOfWork, useExisting: TypeOrmUnitOfWork },
    { provide: TriggerRepository, useClass: extras.triggerRepository ?? TypeOrmTriggerRepository },
    { provide: InvocationRepository, useClass: extras.invocationRepository ?? TypeOrmInvocationRepository },
    { provide: CreditLedger, useClass: extras.creditLedger ?? TypeOrmCreditLedger },
    { provide: BotRunner, useClass: extras.runner ?? InProcessBotRunner },
    { provide: CompletionBus, useClass: extras.completionBus ?? InMemoryCompletionBus },
    { provide: RateLimitStorage, useClass: extras.rateLimitStorage ?? SlidingWindowThrottlerStorage },
  ];
}

export const {
  ConfigurableModuleClass: ConfigurableWebhookTriggerModule,
  MODULE_OPTIONS_TOKEN: WEBHOOK_TRIGGER_MODULE_OPTIONS,
  OPTIONS_TYPE: WEBHOOK_TRIGGER_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: WEBHOOK_TRIGGER_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<WebhookTriggerModuleOptions>({ moduleName: 'WebhookTrigger', optionsInjectionToken: MODULE_OPTIONS })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createWebhookTriggerOptions')
  // Every extra is listed (undefined by default) so that Nest strips all of them from the options object.
  .setExtras<WebhookTriggerModuleExtras>(
    {
      isGlobal: false,
      dataSourceName: undefined,
      triggerRepository: undefined,
      invocationRepository: undefined,
      creditLedger: undefined,
      unitOfWork: undefined,
      runner: undefined,
      completionBus: undefined,
      rateLimitStorage: undefined,
    },
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

/** Argument of `WebhookTriggerModule.forRootAsync()`: imports, inject, useFactory/useClass/useExisting and the extras. */
export type WebhookTriggerModuleAsyncOptions = typeof WEBHOOK_TRIGGER_ASYNC_OPTIONS_TYPE;
