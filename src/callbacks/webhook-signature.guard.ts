import { type CanActivate, type ExecutionContext, Inject, Injectable, mixin, type Type, UnauthorizedException } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { IncomingHttpHeaders } from 'node:http';
import { WebhookConfigurationError, WebhookVerificationError } from '../errors/webhook-trigger.errors.js';
import {
  SIGNATURE_TOLERANCE_INVALID,
  WEBHOOK_BODY_UNREADABLE,
  WEBHOOK_RAW_BODY_MISSING,
  WITH_SECRET_INVALID,
} from '../errors/webhook-trigger.messages.js';
import { verifyWebhookSignature, webhookSecretKeys, type WebhookSecrets } from './standard-webhooks.js';

/** The secret(s) a guard checks against, or a function giving them on each request (from config, a vault…). */
export type WebhookSecretSource = WebhookSecrets | ((moduleRef: ModuleRef) => WebhookSecrets | Promise<WebhookSecrets>);

export interface WebhookSignatureGuardOptions {
  /** How far the `webhook-timestamp` may be from now, either way, in seconds. @default 300 */
  toleranceSec?: number;
}

/** What the guard reads: Express and Fastify requests both have these. */
interface ReceivedRequest {
  headers: IncomingHttpHeaders;
  rawBody?: unknown;
  body?: unknown;
}

/**
 * A guard for a route that RECEIVES Standard Webhooks callbacks (from this library or any producer of the
 * symmetric scheme): it verifies the signature over the raw body and answers 401 when it does not hold.
 *
 * ```ts
 * // main.ts: keep the raw body (Express and Fastify)
 * const app = await NestFactory.create(AppModule, { rawBody: true });
 *
 * @Post('run-finished')
 * @UseGuards(WebhookSignatureGuard.withSecret(process.env.CALLBACK_SECRET!))
 * finished(@Body() event: RunCallback, @Headers('webhook-id') id: string) { … }
 * ```
 *
 * The secret can also come from a function called on each request with the module's `ModuleRef`
 * (`withSecret((ref) => ref.get(ConfigService, { strict: false }).getOrThrow('CALLBACK_SECRET'))`), or from a
 * subclass that injects what it needs and implements `secret()`. An array of secrets accepts any of them.
 *
 * The raw body is `req.rawBody` (Nest's `rawBody: true`) or, failing that, a body that a raw parser left as a
 * Buffer or string. When a JSON body came without it, the guard throws a `WebhookConfigurationError` saying how
 * to turn it on (a 500, logged by Nest: the app is misconfigured, not the sender); a body of a type no parser
 * read is answered 401.
 */
@Injectable()
export abstract class WebhookSignatureGuard implements CanActivate {
  /** Seconds the timestamp may be off, either way. */
  protected readonly toleranceSec: number = 300;

  /** The secret(s) to verify against, asked on each request. */
  protected abstract secret(context: ExecutionContext): WebhookSecrets | Promise<WebhookSecrets>;

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<ReceivedRequest>();
    const raw = rawBodyOf(request);
    if (raw === undefined) {
      // A JSON body that was parsed but not kept raw: the app lacks `rawBody: true`, which a log must say.
      // Another type was never parsed (callbacks are JSON): the sender's fault, answered like a bad signature.
      if (isJson(request.headers['content-type'])) throw new WebhookConfigurationError(WEBHOOK_RAW_BODY_MISSING);
      throw new UnauthorizedException(WEBHOOK_BODY_UNREADABLE(request.headers['content-type']));
    }
    const secret = await this.secret(context);
    try {
      verifyWebhookSignature(secret, request.headers, raw, { toleranceSec: this.toleranceSec, parseJson: false });
    } catch (error) {
      if (error instanceof WebhookVerificationError) throw new UnauthorizedException(error.message);
      throw error;
    }
    return true;
  }

  /** A guard class for `@UseGuards()` that checks against `source` (a secret, several, or a function). */
  static withSecret(source: WebhookSecretSource, options: WebhookSignatureGuardOptions = {}): Type<CanActivate> {
    const toleranceSec = options.toleranceSec ?? 300;
    if (!Number.isFinite(toleranceSec) || toleranceSec < 0) {
      throw new RangeError(SIGNATURE_TOLERANCE_INVALID(toleranceSec));
    }
    // A fixed secret is checked now, while the decorators run at startup, not on the first callback.
    if (typeof source !== 'function') checkSecret(source);

    @Injectable()
    class ConfiguredWebhookSignatureGuard extends WebhookSignatureGuard {
      protected override readonly toleranceSec = toleranceSec;

      constructor(@Inject(ModuleRef) private readonly moduleRef: ModuleRef) {
        super();
      }

      protected secret(): WebhookSecrets | Promise<WebhookSecrets> {
        return typeof source === 'function' ? source(this.moduleRef) : source;
      }
    }
    // mixin: a distinct name per configured guard, so two on one route or module never collide as injectables.
    return mixin(ConfiguredWebhookSignatureGuard);
  }
}

function checkSecret(secrets: WebhookSecrets): void {
  try {
    webhookSecretKeys(secrets);
  } catch (error) {
    if (error instanceof WebhookConfigurationError) throw new WebhookConfigurationError(WITH_SECRET_INVALID(error.message));
    throw error;
  }
}

function rawBodyOf(request: ReceivedRequest): Buffer | string | undefined {
  if (Buffer.isBuffer(request.rawBody) || typeof request.rawBody === 'string') return request.rawBody;
  if (Buffer.isBuffer(request.body) || typeof request.body === 'string') return request.body;
  const { 'content-length': length, 'transfer-encoding': chunked } = request.headers;
  // No body at all: nothing for a parser to keep, and the empty body is what was signed.
  if (!chunked && (length === undefined || length === '0')) return '';
  return undefined;
}

function isJson(contentType: string | undefined): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || type.endsWith('+json');
}
