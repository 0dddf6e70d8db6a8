import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { ADMIN_WITHOUT_MODULE } from '../errors/webhook-trigger.messages.js';
import { WebhookTriggersAdmin } from './webhook-triggers.admin.js';

/**
 * Finds the app's `WebhookTriggersAdmin` for the admin module's controllers, once, at init.
 *
 * Why a look-up and not plain injection: the admin module is imported by the host beside
 * `WebhookTriggerModule.forRoot()`, not inside it, and the webhook module is global only when the host
 * says so (`isGlobal`). Nest injects only what a module imports or a global module exports, and the admin
 * module cannot import the host's configured instance of the webhook module. `ModuleRef.get` with
 * `strict: false` finds it wherever the host imported it. At init, not in a factory: every provider exists
 * by then, while a factory could run before the webhook module's providers are built.
 */
@Injectable()
export class AdminServiceLookup implements OnModuleInit {
  private found?: WebhookTriggersAdmin;

  constructor(private readonly moduleRef: ModuleRef) {}

  onModuleInit(): void {
    try {
      this.found = this.moduleRef.get(WebhookTriggersAdmin, { strict: false });
    } catch {
      throw new WebhookConfigurationError(ADMIN_WITHOUT_MODULE);
    }
  }

  get admin(): WebhookTriggersAdmin {
    if (!this.found) throw new WebhookConfigurationError(ADMIN_WITHOUT_MODULE);
    return this.found;
  }
}
