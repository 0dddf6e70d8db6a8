import { Inject, Injectable, RequestMethod } from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost } from '@nestjs/core';
import { servedPath } from '../../http/global-prefix.js';
import { WEBHOOK_ROUTE_METHODS, WEBHOOK_ROUTES, WEBHOOKS_PATH } from '../../http/webhook-routes.js';
import { RESOLVED_OPTIONS } from '../../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../../options/webhook-trigger-options.interface.js';

/** The URL a caller triggers a trigger at, as the admin shows it. */
@Injectable()
export class TriggerUrls {
  constructor(
    private readonly appConfig: ApplicationConfig,
    private readonly adapterHost: HttpAdapterHost,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  /**
   * `{base}/{global prefix}/webhooks/{id}/trigger`, without the prefix when its `exclude` covers the trigger
   * route (the route is then served at the root: `servedPath` judges it as Nest's router does). The base is
   * `publicBaseUrl` when set; else `origin` (the viewer's, see `requestOrigin`); else this app's own address
   * once it listens. Every trigger URL the module hands out (admin service, admin API, screens) is this one.
   */
  triggerUrl(triggerId: string, origin?: string): string {
    // Read at each call: the host calls setGlobalPrefix() after the module's providers are built.
    const route = servedPath(this.appConfig, `${WEBHOOKS_PATH}/${WEBHOOK_ROUTES.trigger}`, RequestMethod[WEBHOOK_ROUTE_METHODS.trigger]);
    const base = this.options.publicBaseUrl ?? origin ?? this.ownOrigin();
    return `${base}${route.replace(':triggerId', () => triggerId)}`;
  }

  /** `http://localhost:<port>` of the HTTP server; port 3000 before it listens (or in an app without HTTP). */
  private ownOrigin(): string {
    // An application context (NestFactory.createApplicationContext) has no HTTP adapter.
    const server = this.adapterHost.httpAdapter?.getHttpServer() as { address?: () => unknown } | undefined;
    const address = typeof server?.address === 'function' ? server.address() : null;
    const port = typeof address === 'object' && address !== null ? (address as { port?: unknown }).port : undefined;
    return `http://localhost:${typeof port === 'number' ? port : 3000}`;
  }
}
