import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { RESOLVED_OPTIONS } from '../../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../../options/webhook-trigger-options.interface.js';
import { captureExpressBodies, type ExpressApp } from './express.js';
import { captureFastifyBodies, type FastifyApp } from './fastify.js';

/**
 * Reads the trigger endpoint's body itself, before the host's body parser can.
 *
 * Why: the host's parser runs before routing with the host's limit (100 kB on Express) and answers
 * parse errors in the host's error format through global filters. The trigger endpoint promises its
 * own limit (`maxBodyBytes`) and its own JSON errors, and must check the key before judging the body.
 * So the bytes are captured here, the host parser is told to skip the request, and the controller
 * decides 400/413/415 after the guards have run. The cancel endpoint takes no body: its body is drained
 * the same way and ignored, so a client that sends `Content-Type: application/json` with an empty (or any)
 * body is not refused by the host parser in the host's error format. Requests to other routes (judged by
 * their path, never the query string; see `webhook-routes.ts`) are not touched.
 */
@Injectable()
export class WebhookBodyCapture implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  onModuleInit(): void {
    const adapter = this.adapterHost?.httpAdapter;
    if (!adapter) return; // not an HTTP application
    const instance: unknown = adapter.getInstance();
    if (adapter.getType() === 'fastify') captureFastifyBodies(instance as FastifyApp, this.options.maxBodyBytes);
    else captureExpressBodies(instance as ExpressApp, this.options.maxBodyBytes);
  }
}
