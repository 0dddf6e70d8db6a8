import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { STATUS_CODES } from 'node:http';
import { httpStatusOf, retryAfterOf } from '../errors/error-status.js';
import { ClientGoneError, DatabaseConnectionLostError, SyncTimeoutError } from '../errors/webhook-trigger.errors.js';
import { INTERNAL_ERROR, LOG_CLIENT_GONE, LOG_DATABASE_LOST, LOG_UNEXPECTED_ERROR } from '../errors/webhook-trigger.messages.js';
import { LOG_CONTEXT } from '../options/module.constants.js';
import { rawRequestOf } from './http.types.js';

/** Body of every non-2xx answer of the webhook API. */
export interface WebhookErrorBody {
  success: false;
  statusCode: number;
  error: string;
  message: string;
  /** On 408 from the sync endpoint: the run's current status. */
  status?: string;
}

/**
 * Every failure of the webhook routes becomes `{ success: false, statusCode, error, message }`; never a
 * stack. The module's errors carry their own message, and their status comes from one table
 * (`errors/error-status.ts`); Nest's own HTTP exceptions keep theirs; a lost database connection (a restart,
 * a terminated backend; DatabaseConnectionLostError from the storage) is a 503 with Retry-After, as a retry may succeed; anything else is a logged 500.
 * A client that went away is not an error (a debug line). An answer given while the request's body has
 * not fully arrived (refused before or while reading it) closes the connection, so the rest is never read.
 */
@Catch()
export class WebhookExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const response = host.switchToHttp().getResponse<unknown>();
    const raw = rawRequestOf(host.switchToHttp().getRequest<unknown>());
    if (exception instanceof ClientGoneError) {
      this.logger.debug(LOG_CLIENT_GONE(String(raw.method), String(raw.url)));
      return;
    }
    const [status, message] = this.describe(exception);
    if (!raw.complete) httpAdapter.setHeader(response, 'Connection', 'close');
    const retryAfter = retryAfterOf(exception);
    if (retryAfter !== undefined) httpAdapter.setHeader(response, 'Retry-After', String(retryAfter));
    const body: WebhookErrorBody = { success: false, statusCode: status, error: STATUS_CODES[status] ?? 'Error', message };
    if (exception instanceof SyncTimeoutError) body.status = exception.invocationStatus;
    httpAdapter.reply(response, body, status);
  }

  private describe(exception: unknown): [number, string] {
    // The storage names a lost database (the driver's codes are known in persistence/ only): a warning, not an error.
    if (exception instanceof DatabaseConnectionLostError) this.logger.warn(LOG_DATABASE_LOST(String((exception.cause as Error)?.message)));
    const status = httpStatusOf(exception);
    if (status !== undefined) return [status, (exception as Error).message];
    if (exception instanceof HttpException) return [exception.getStatus(), messageOf(exception)];
    this.logger.error(LOG_UNEXPECTED_ERROR, exception instanceof Error ? exception.stack : String(exception));
    return [HttpStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR];
  }
}

/** The message of an HttpException, whatever shape its response has. */
function messageOf(exception: HttpException): string {
  const response = exception.getResponse();
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : exception.message;
}
