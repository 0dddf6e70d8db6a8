import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { STATUS_CODES } from 'node:http';
import {
  BotNotRegisteredError,
  IdempotencyKeyReusedError,
  InvocationAlreadyFinishedError,
  NotEnoughCreditsError,
  ShuttingDownError,
} from '../errors/webhook-trigger.errors.js';
import {
  ALREADY_FINISHED,
  BOT_NOT_REGISTERED,
  IDEMPOTENCY_KEY_REUSED,
  INTERNAL_ERROR,
  NOT_ENOUGH_CREDITS,
  SHUTTING_DOWN,
} from '../errors/webhook-trigger.messages.js';
import { WebhookSyncTimeoutException } from '../errors/webhook-sync-timeout.exception.js';
import { WebhookThrottledException } from '../errors/webhook-throttled.exception.js';

/** Body of every non-2xx answer of the webhook API. */
export interface WebhookErrorBody {
  success: false;
  statusCode: number;
  error: string;
  message: string;
  /** On 408 from the sync endpoint: the run's current status. */
  status?: string;
}

/** Every failure of the webhook routes becomes `{ success: false, statusCode, error, message }`; never a stack. */
@Catch()
export class WebhookExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('WebhookTriggerModule');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const response = host.switchToHttp().getResponse();
    const [status, message] = this.describe(exception);
    if (exception instanceof WebhookThrottledException) {
      httpAdapter.setHeader(response, 'Retry-After', String(exception.retryAfterSeconds));
    } else if (exception instanceof ShuttingDownError) {
      httpAdapter.setHeader(response, 'Retry-After', '1');
    }
    const body: WebhookErrorBody = { success: false, statusCode: status, error: STATUS_CODES[status] ?? 'Error', message };
    if (exception instanceof WebhookSyncTimeoutException) body.status = exception.invocationStatus;
    httpAdapter.reply(response, body, status);
  }

  private describe(exception: unknown): [number, string] {
    if (exception instanceof HttpException) {
      const response = exception.getResponse();
      const message =
        typeof response === 'string'
          ? response
          : Array.isArray((response as { message?: unknown }).message)
            ? ((response as { message: string[] }).message).join('; ')
            : String((response as { message?: unknown }).message ?? exception.message);
      return [exception.getStatus(), message];
    }
    if (exception instanceof NotEnoughCreditsError) {
      return [HttpStatus.PAYMENT_REQUIRED, NOT_ENOUGH_CREDITS(exception.accountId, exception.cost)];
    }
    if (exception instanceof BotNotRegisteredError) return [HttpStatus.NOT_FOUND, BOT_NOT_REGISTERED(exception.botId)];
    if (exception instanceof IdempotencyKeyReusedError) return [HttpStatus.UNPROCESSABLE_ENTITY, IDEMPOTENCY_KEY_REUSED];
    if (exception instanceof InvocationAlreadyFinishedError) {
      return [HttpStatus.CONFLICT, ALREADY_FINISHED(exception.invocationId, exception.status)];
    }
    if (exception instanceof ShuttingDownError) return [HttpStatus.SERVICE_UNAVAILABLE, SHUTTING_DOWN];
    this.logger.error('Unexpected error in the webhook API', exception instanceof Error ? exception.stack : String(exception));
    return [HttpStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR];
  }
}
