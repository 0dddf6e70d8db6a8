import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { STATUS_CODES } from 'node:http';
import { httpStatusOf, retryAfterOf } from '../errors/error-status.js';
import { WebhookTriggerError } from '../errors/webhook-trigger.errors.js';
import { INTERNAL_ERROR } from '../errors/webhook-trigger.messages.js';
import { LOG_CONTEXT } from '../options/module.constants.js';

/**
 * Every error answered under the admin in one shape, Nest's `{ statusCode, error, message }`, whatever
 * global filter the host has (one API, one shape): the module's own errors by the one status table (bad
 * input 400, not enough credits 402, finished run 409, shutting down 503), HttpExceptions (the host's
 * guards' 401/403 included) as Nest answers them. One without a status (a configuration error at run
 * time) is a logged 500. Other errors are left to Nest and the host.
 */
@Catch(WebhookTriggerError, HttpException)
export class AdminErrorFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: WebhookTriggerError | HttpException, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const response = host.switchToHttp().getResponse<unknown>();
    if (error instanceof HttpException) {
      const body = error.getResponse();
      const status = error.getStatus();
      httpAdapter.reply(response, typeof body === 'object' ? body : { statusCode: status, message: body }, status);
      return;
    }
    const status = httpStatusOf(error) ?? 500;
    if (status === 500) new Logger(LOG_CONTEXT).error(`Admin: ${error.message}`, error.stack);
    const retryAfter = retryAfterOf(error);
    if (retryAfter !== undefined) httpAdapter.setHeader(response, 'Retry-After', String(retryAfter));
    httpAdapter.reply(
      response,
      { statusCode: status, error: STATUS_CODES[status], message: status === 500 ? INTERNAL_ERROR : error.message },
      status,
    );
  }
}
