import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { ADMIN_WITHOUT_MODULE } from '../errors/webhook-trigger.messages.js';
import { WebhookTriggersAdmin } from './webhook-triggers.admin.js';

/**
 * Finds the app's `WebhookTriggersAdmin` wherever `WebhookTriggerModule` was imported, so the admin
 * module works without `isGlobal`. Resolved at init (every provider exists by then), not in a factory
 * that could run before the webhook module's providers are built.
 */
@Injectable()
export class AdminBackend implements OnModuleInit {
  private resolved?: WebhookTriggersAdmin;

  constructor(private readonly moduleRef: ModuleRef) {}

  onModuleInit(): void {
    try {
      this.resolved = this.moduleRef.get(WebhookTriggersAdmin, { strict: false });
    } catch {
      throw new WebhookConfigurationError(ADMIN_WITHOUT_MODULE);
    }
  }

  get admin(): WebhookTriggersAdmin {
    if (!this.resolved) throw new WebhookConfigurationError(ADMIN_WITHOUT_MODULE);
    return this.resolved;
  }
}
