import {
  type CallHandler,
  Controller,
  type DynamicModule,
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  Module,
  type NestInterceptor,
  RequestMethod,
  type OnModuleInit,
  type Provider,
  type Type,
  UseFilters,
  UseGuards,
  UseInterceptors,
  VERSION_NEUTRAL,
} from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost, ModuleRef } from '@nestjs/core';
import { servedPath } from '../http/global-prefix.js';
import { ApiExcludeController } from '../http/openapi-decorators.js';
import type { Observable } from 'rxjs';
import { ADMIN_NO_GUARDS } from '../errors/webhook-trigger.messages.js';
import { AdminScreensPaths } from '../lifecycle/admin-screens-paths.js';
import { LOG_CONTEXT } from '../options/module.constants.js';
import { AdminApiController } from './admin-api.controller.js';
import { AdminServiceLookup } from './admin-service-lookup.js';
import { AuditPrincipalInterceptor } from './audit/audit-principal.interceptor.js';
import { AdminChangeGuard } from './admin-change.guard.js';
import { AdminErrorFilter } from './admin-error.filter.js';
import { AdminEventStreams } from './admin-event-streams.js';
import {
  ADMIN_SETTINGS,
  type AdminGuard,
  resolveAdminMount,
  resolveAdminSettings,
  type WebhookTriggerAdminAsyncOptions,
  type WebhookTriggerAdminOptions,
} from './admin-options.js';
import { AdminScreensController } from './admin-screens.controller.js';
import { loadAdminScreenFiles } from './admin-screens.js';

const ADMIN_MOUNT = Symbol('WEBHOOK_TRIGGER_ADMIN_MOUNT');

/** Every JSON answer of the admin API is private and never cached. */
@Injectable()
class AdminNoStoreInterceptor implements NestInterceptor {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const response = context.switchToHttp().getResponse<unknown>();
    this.adapterHost.httpAdapter.setHeader(response, 'Cache-Control', 'no-store');
    this.adapterHost.httpAdapter.setHeader(response, 'X-Content-Type-Options', 'nosniff');
    return next.handle();
  }
}

/**
 * At startup: warns once when the admin is mounted without any guard, and tells the webhook module where the
 * screens are (its startup hint names them). Found with `strict: false` for the reason AdminServiceLookup
 * gives; without the webhook module there is nothing to tell (AdminServiceLookup reports that).
 */
@Injectable()
class AdminMountCheck implements OnModuleInit {
  constructor(
    @Inject(ADMIN_MOUNT) private readonly mount: { path: string; guards: AdminGuard[] },
    private readonly moduleRef: ModuleRef,
    private readonly appConfig: ApplicationConfig,
  ) {}

  onModuleInit(): void {
    if (this.mount.guards.length === 0) new Logger(LOG_CONTEXT).warn(ADMIN_NO_GUARDS(this.mount.path));
    let paths: AdminScreensPaths | undefined;
    try {
      paths = this.moduleRef.get(AdminScreensPaths, { strict: false });
    } catch {
      paths = undefined;
    }
    // The page's route, as Nest serves it under the global prefix and its `exclude`.
    paths?.add(() => servedPath(this.appConfig, this.mount.path, RequestMethod.GET));
  }
}

/**
 * A controller class of its own for one mount: `base` with the mount's path, the host's guards first
 * (who is an admin), then ours (read-only, CSRF). A subclass per mount, so two mounts never share
 * route metadata.
 */
function mounted<T>(base: Type<T>, path: string, guards: AdminGuard[], interceptors: Type[] = []): Type<T> {
  const controller = class extends (base as Type) {} as Type<T>;
  Object.defineProperty(controller, 'name', { value: base.name });
  Controller({ path, version: VERSION_NEUTRAL })(controller);
  UseGuards(...guards, AdminChangeGuard)(controller);
  UseFilters(AdminErrorFilter)(controller);
  if (interceptors.length) UseInterceptors(...interceptors)(controller);
  ApiExcludeController()(controller);
  return controller;
}

/**
 * Mounts the spec's trigger management as screens and a JSON API inside the host's app: a bot's
 * **Settings** → **Bot Triggers** (Add Trigger, View, Rotate key, Delete), its **History** (filters,
 * search, live updates, run detail, Cancel, Replay) and its account's credits. Needs
 * `WebhookTriggerModule.forRoot()` in the same app. See docs/admin.md.
 *
 * ```ts
 * WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [AdminGuard] })
 * ```
 */
@Module({})
export class WebhookTriggerAdminModule {
  static forRoot(options: WebhookTriggerAdminOptions): DynamicModule {
    const { path: _path, guards: _guards, imports: _imports, ...settings } = options ?? ({} as WebhookTriggerAdminOptions);
    return this.define(options, { provide: ADMIN_SETTINGS, useValue: resolveAdminSettings(settings) });
  }

  /** `path`, `guards` and `imports` are routing, known when the module is defined; the factory gives the settings. */
  static forRootAsync(options: WebhookTriggerAdminAsyncOptions): DynamicModule {
    return this.define(options, {
      provide: ADMIN_SETTINGS,
      inject: options?.inject ?? [],
      useFactory: async (...args: unknown[]) => resolveAdminSettings(await options.useFactory(...args)),
    });
  }

  private static define(options: WebhookTriggerAdminOptions | WebhookTriggerAdminAsyncOptions, settings: Provider): DynamicModule {
    const mount = resolveAdminMount(options);
    loadAdminScreenFiles(); // a package without its screens fails at startup, not on the first visit
    return {
      module: WebhookTriggerAdminModule,
      imports: options.imports ?? [],
      controllers: [
        mounted(AdminScreensController, mount.path, mount.guards),
        mounted(AdminApiController, `${mount.path}/api`, mount.guards, [AdminNoStoreInterceptor, AuditPrincipalInterceptor]),
      ],
      providers: [
        settings,
        { provide: ADMIN_MOUNT, useValue: mount },
        AdminServiceLookup,
        AdminEventStreams,
        AdminChangeGuard,
        AdminNoStoreInterceptor,
        AuditPrincipalInterceptor,
        AdminMountCheck,
      ],
    };
  }
}
