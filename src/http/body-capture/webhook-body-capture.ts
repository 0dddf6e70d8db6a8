import { Injectable, type OnModuleInit, RequestMethod } from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost } from '@nestjs/core';
import { WebhookMetrics } from '../../telemetry/webhook-metrics.js';
import { ShutdownState } from '../../lifecycle/shutdown.state.js';
import { webhookRequests } from '../webhook-routes.js';
import { prefixOf } from '../global-prefix.js';
import { webhookAnswerHook } from './answer-hook.js';
import { captureExpressBodies, type ExpressApp } from './express.js';
import { captureFastifyBodies, type FastifyApp } from './fastify.js';

/**
 * Keeps the trigger endpoint's body from the host's body parser, unread.
 *
 * Why: the host's parser runs before routing, with the host's limit (100 kB on Express), reads the
 * whole body before anything is decided, and answers parse errors in the host's error format. The
 * trigger endpoint decides 404/401/429 from the path and headers alone, BEFORE a byte of the body is
 * read (a stranger cannot make a node read or hold a body), then reads it with its own limits
 * (`maxBodyBytes`, `bodyTimeoutMs`, `maxJsonDepth`) and answers in its own JSON error shape. The cancel
 * endpoint takes no body: whatever a client sends is never read (and never judged by the host's parser).
 * The GET routes take no body: one sent is kept from the parser, never read, and its connection closed. Requests
 * to other routes (judged by their whole path, under the host's global prefix, never the query string; see
 * `webhook-routes.ts`) are not touched. A webhook path with an undecodable id (`%zz`) is answered 404 before the
 * router, one called with another method 405. The same
 * front sees every webhook answer (`webhookAnswerHook`: metrics, and connections closed once shutdown began).
 */
@Injectable()
export class WebhookBodyCapture implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly appConfig: ApplicationConfig,
    private readonly metrics: WebhookMetrics,
    private readonly shutdown: ShutdownState,
  ) {}

  onModuleInit(): void {
    const adapter = this.adapterHost?.httpAdapter;
    if (!adapter) return; // not an HTTP application
    const instance: unknown = adapter.getInstance();
    const answerHook = webhookAnswerHook(this.metrics, this.shutdown);
    // Nest mounted the routes (under the global prefix as set now) before module init.
    const webhookRequestOf = webhookRequests((routePath, method) => prefixOf(this.appConfig, routePath, RequestMethod[method]));
    if (adapter.getType() === 'fastify') captureFastifyBodies(instance as FastifyApp, webhookRequestOf, answerHook);
    else captureExpressBodies(instance as ExpressApp, webhookRequestOf, answerHook);
  }
}
