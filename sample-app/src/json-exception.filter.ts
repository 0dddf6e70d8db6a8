import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { STATUS_CODES } from 'node:http';

/**
 * Global filter of the sample app: every error outside the webhook routes (which have their own filter)
 * answers `{ success: false, statusCode, error, message }`, like the webhook API, and never a stack; under
 * /admin (the library's admin and the sign-in) it answers Nest's `{ statusCode, error, message }`, the shape
 * the admin module gives its own errors (docs/admin.md), so one API never answers in two shapes.
 */
@Catch()
export class JsonExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('SampleApp');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const { httpAdapter } = this.adapterHost;
    const response = host.switchToHttp().getResponse<unknown>();
    let status: number = HttpStatus.INTERNAL_SERVER_ERROR;
    let message = 'Internal server error';
    if (exception instanceof HttpException) {
      status = exception.getStatus();
      const body = exception.getResponse();
      const m = typeof body === 'string' ? body : (body as { message?: unknown }).message;
      message = Array.isArray(m) ? m.join('; ') : typeof m === 'string' ? m : exception.message;
      if (status === (HttpStatus.UNAUTHORIZED as number)) httpAdapter.setHeader(response, 'WWW-Authenticate', 'Bearer');
    } else if (isBodyParserError(exception)) {
      status = exception.status;
      message = exception.type === 'entity.parse.failed' ? 'The request body is not valid JSON' : exception.message;
    } else {
      this.logger.error('Unexpected error', exception instanceof Error ? exception.stack : String(exception));
    }
    const body = { statusCode: status, error: STATUS_CODES[status] ?? 'Error', message };
    const path = String(httpAdapter.getRequestUrl(host.switchToHttp().getRequest<unknown>()));
    httpAdapter.reply(response, ADMIN_PATH.test(path) ? body : { success: false, ...body }, status);
  }
}

/** The admin's mount (sample-app/src/app.module.ts) and everything under it. */
const ADMIN_PATH = /^\/admin(?:[/?#]|$)/;

/** Errors of Express's body parser carry a 4xx `status` and a `type`. */
function isBodyParserError(e: unknown): e is Error & { status: number; type: string } {
  const x = e as { status?: unknown; type?: unknown } | null;
  return e instanceof Error && typeof x?.status === 'number' && x.status >= 400 && x.status < 500 && typeof x.type === 'string';
}
