import { type ArgumentsHost, Catch, type ExceptionFilter, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { STATUS_CODES } from 'node:http';
import { httpStatusOf, retryAfterOf } from '../errors/error-status.js';
import { WebhookTriggerError } from '../errors/webhook-trigger.errors.js';
import { INTERNAL_ERROR } from '../errors/webhook-trigger.messages.js';
import { LOG_CONTEXT } from '../options/module.constants.js';

/**
 * The module's own errors thrown under the admin (bad input 400, not enough credits 402, finished run
 * 409, shutting down 503) answered as Nest answers an HttpException: `{ statusCode, error, message }`.
 * One without a status (a configuration error at run time) is a logged 500. Anything else (Nest's own
 * HttpExceptions, unknown errors) is left to Nest and the host's filters.
 */
@Catch(WebhookTriggerError)
export class AdminErrorFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: WebhookTriggerError, host: ArgumentsHost): void {
    const status = httpStatusOf(error) ?? 500;
    if (status === 500) new Logger(LOG_CONTEXT).error(`Admin: ${error.message}`, error.stack);
    const { httpAdapter } = this.adapterHost;
    const response = host.switchToHttp().getResponse<unknown>();
    const retryAfter = retryAfterOf(error);
    if (retryAfter !== undefined) httpAdapter.setHeader(response, 'Retry-After', String(retryAfter));
    httpAdapter.reply(
      response,
      { statusCode: status, error: STATUS_CODES[status], message: status === 500 ? INTERNAL_ERROR : error.message },
      status,
    );
  }
}
