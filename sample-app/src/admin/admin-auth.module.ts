import { type DynamicModule, Module } from '@nestjs/common';
import { ADMIN_AUTH_OPTIONS, type AdminAuthOptions } from './admin-auth.options.js';
import { AdminCredentials } from './admin-credentials.js';
import { AdminGuard } from './admin.guard.js';
import { SignedOutSessions } from './signed-out-sessions.js';
import { SignInController } from './sign-in.controller.js';
import { WrongTokenLimiter } from './wrong-token-limiter.js';

/**
 * The sample app's admin sign-in: `GET/POST /admin/sign-in`, `POST /admin/sign-out`, and what `AdminGuard`
 * needs. Give the same module to `WebhookTriggerAdminModule.forRoot({ guards: [AdminGuard], imports: [...] })`
 * so the guard and the sign-in form share one wrong-token count.
 */
@Module({})
export class AdminAuthModule {
  static forRoot(options: AdminAuthOptions): DynamicModule {
    return {
      module: AdminAuthModule,
      controllers: [SignInController],
      providers: [{ provide: ADMIN_AUTH_OPTIONS, useValue: options }, WrongTokenLimiter, SignedOutSessions, AdminCredentials, AdminGuard],
      exports: [AdminCredentials, AdminGuard],
    };
  }
}
