import type { FactoryProvider } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { MODULE_IMPORTED_TWICE } from '../errors/webhook-trigger.messages.js';

/** Token every instance of the module provides; counting the modules that hold it counts the instances. */
export const SINGLE_INSTANCE = Symbol('WEBHOOK_TRIGGER_SINGLE_INSTANCE');

/**
 * Refuses a second `forRoot()`/`forRootAsync()` in one application: each instance would map the webhook routes
 * again and open a database of its own, and the trigger URLs one hands out would answer 404 on the other.
 * Counted in this application's own ModulesContainer (never a process-wide count: a process may hold many
 * apps, each with its one instance). A factory that the resolved options depend on, so it throws while the
 * providers are built, before any database is opened.
 */
export const singleInstanceProvider: FactoryProvider<true> = {
  provide: SINGLE_INSTANCE,
  inject: [ModulesContainer],
  useFactory: (modules: ModulesContainer) => {
    const instances = [...modules.values()].filter((module) => module.providers.has(SINGLE_INSTANCE)).length;
    if (instances > 1) throw new WebhookConfigurationError(MODULE_IMPORTED_TWICE(instances));
    return true;
  },
};
