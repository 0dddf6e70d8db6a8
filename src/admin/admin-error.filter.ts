import { type ArgumentsHost, Catch, type ExceptionFilter, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { STATUS_CODES } from 'node:http';
import { httpStatusOf, retryAfterOf } from '../errors/error-status.js';
import { WebhookTriggerError } from '../errors/webhook-trigger.errors.js';
import { INTERNAL_ERROR } from '../errors/webhook-trigger.messages.js';
import { LOG_CONTEXT } from '../options/module.constants.js';

/**
 * Every answer of the admin's own (bad input 400, read-only or cross-site 403, unknown 404, not enough
 * credits 402, finished run 409, too many streams, a full backlog or shutting down 503) is one of the module's errors,
 * answered here as Nest answers an HttpException, `{ statusCode, error, message }`, whatever global filter
 * the host has: one API, one shape. One without a status (a configuration error at run time) is a logged
 * 500. The host's guards' exceptions, and anything else, stay the host's to shape.
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
