import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Readable } from 'node:stream';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { CANCEL_ROUTE_PATTERN, RESOLVED_OPTIONS, TRIGGER_ROUTE_PATTERN } from '../webhook-trigger.constants.js';
import { CAPTURED_BODY, type CapturedBody, type RawRequest } from './http.types.js';

/**
 * Reads the trigger endpoint's body itself, before the host's body parser can.
 *
 * Why: the host's parser runs before routing with the host's limit (100 kB on Express) and answers
 * parse errors in the host's error format through global filters. The trigger endpoint promises its
 * own limit (`maxBodyBytes`) and its own JSON errors, and must check the key before judging the body.
 * So the bytes are captured here, the host parser is told to skip the request, and the controller
 * decides 400/413/415 after the guards have run. The cancel endpoint takes no body: its body is drained
 * the same way and ignored, so a client that sends `Content-Type: application/json` with an empty (or any)
 * body is not refused by the host parser in the host's error format. Requests to other routes are not touched.
 */
@Injectable()
export class WebhookBodyReader implements OnModuleInit {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  onModuleInit(): void {
    const adapter = this.adapterHost?.httpAdapter;
    if (!adapter) return; // not an HTTP application
    const instance = adapter.getInstance();
    if (adapter.getType() === 'fastify') this.installFastify(instance);
    else this.installExpress(instance);
  }

  private installExpress(app: {
    use: (fn: (req: RawRequest & { _body?: boolean }, res: unknown, next: (e?: unknown) => void) => void) => void;
    router?: { stack: unknown[] };
  }): void {
    const capture = (req: RawRequest & { _body?: boolean }, _res: unknown, next: (e?: unknown) => void) => {
      if (!this.readsOwnBody(req.method, req.url)) return next();
      this.read(req).then((body) => {
        req[CAPTURED_BODY] = body;
        req._body = true; // body-parser skips requests marked as parsed
        next();
      }, next);
    };
    app.use(capture);
    // Nest registered its body parsers before module init; move ours in front of them.
    const stack = app.router?.stack;
    if (stack && stack[stack.length - 1]) stack.unshift(stack.pop());
  }

  private installFastify(fastify: {
    addHook: (name: 'preParsing', hook: (request: { raw: RawRequest; method: string; url: string }, reply: unknown, payload: Readable) => Promise<Readable>) => void;
  }): void {
    fastify.addHook('preParsing', async (request, _reply, payload) => {
      if (!this.readsOwnBody(request.method, request.url)) return payload;
      request.raw[CAPTURED_BODY] = await this.read(payload, request.raw.headers['content-type']);
      // Present an empty body so Fastify's content-type parsers (and their 415/413) stay out of it.
      const headers = request.raw.headers;
      delete headers['content-type'];
      delete headers['transfer-encoding'];
      headers['content-length'] = '0';
      return Readable.from([]);
    });
  }

  private readsOwnBody(method: string | undefined, url: string | undefined): boolean {
    return method === 'POST' && url !== undefined && (TRIGGER_ROUTE_PATTERN.test(url) || CANCEL_ROUTE_PATTERN.test(url));
  }

  /** Buffers up to `maxBodyBytes`; past that it keeps draining (so the connection can answer) but stores nothing. */
  private read(stream: Readable | RawRequest, contentType = (stream as RawRequest).headers?.['content-type']): Promise<CapturedBody> {
    const limit = this.options.maxBodyBytes;
    const declared = Number((stream as RawRequest).headers?.['content-length']);
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let tooLarge = Number.isFinite(declared) && declared > limit;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > limit) tooLarge = true;
        if (!tooLarge) chunks.push(chunk);
      });
      stream.on('end', () => resolve({ contentType, bytes: tooLarge ? null : Buffer.concat(chunks, size), tooLarge }));
      stream.on('error', reject);
    });
  }
}
