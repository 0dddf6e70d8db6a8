import { type CanActivate, type ExecutionContext, HttpException, HttpStatus, Injectable, UnauthorizedException } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { AdminCredentials, type AdminRequest, TooManyWrongTokensException } from './admin-credentials.js';

/** Where a browser without a session is sent. */
export const SIGN_IN_PATH = '/admin/sign-in';
export const NOT_SIGNED_IN_MESSAGE = `Send the admin token as "Authorization: Bearer <ADMIN_TOKEN>" or sign in at ${SIGN_IN_PATH}`;

/** A browser asking for a page without a session: 303 to the sign-in page (the guard sets `Location`). */
class SignInRedirect extends HttpException {
  constructor() {
    super(`Sign in at ${SIGN_IN_PATH}`, HttpStatus.SEE_OTHER);
  }
}

/**
 * Who may use the admin (the library's `WebhookTriggerAdminModule` runs it before every route it mounts):
 * a request with `Authorization: Bearer <ADMIN_TOKEN>` (scripts, curl) or with a valid `admin_session` cookie
 * (a browser that signed in at /admin/sign-in). Otherwise a browser asking for a page is redirected to the
 * sign-in page, and anything else gets 401. Wrong Bearer tokens count towards the same per-IP limit as wrong
 * sign-ins (429 with Retry-After). Works on Express and Fastify.
 */
@Injectable()
export class AdminGuard implements CanActivate {
  constructor(
    private readonly credentials: AdminCredentials,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<AdminRequest>();
    const response = http.getResponse<unknown>();
    const bearer = bearerToken(request.headers.authorization);
    if (bearer !== undefined) {
      let right: boolean;
      try {
        right = this.credentials.judgeToken(request, bearer);
      } catch (e) {
        if (e instanceof TooManyWrongTokensException) this.setHeader(response, 'Retry-After', String(e.retryAfterSeconds));
        throw e;
      }
      // A wrong token is an answer for the script that sent it, never a redirect.
      if (!right) throw new UnauthorizedException(NOT_SIGNED_IN_MESSAGE);
      request.user = { id: 'admin (token)' };
      return true;
    }
    if (await this.credentials.hasSession(request)) {
      request.user = { id: 'admin (signed in)' };
      return true;
    }
    if (wantsPage(request)) {
      // Whatever exception filter answers (the app's or Nest's) keeps headers already set on the response.
      this.setHeader(response, 'Location', SIGN_IN_PATH);
      throw new SignInRedirect();
    }
    throw new UnauthorizedException(NOT_SIGNED_IN_MESSAGE);
  }

  private setHeader(response: unknown, name: string, value: string): void {
    this.adapterHost.httpAdapter.setHeader(response, name, value);
  }
}

/** The token of `Authorization: Bearer <token>`; undefined without one (no header, or another scheme). */
function bearerToken(header: string | undefined): string | undefined {
  const match = typeof header === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header) : null;
  return match ? match[1] : undefined;
}

/** A browser navigating: GET (or HEAD) that accepts HTML. fetch() and EventSource calls of the screens do not. */
function wantsPage(request: AdminRequest): boolean {
  const accept = request.headers.accept;
  return (request.method === 'GET' || request.method === 'HEAD') && typeof accept === 'string' && /\btext\/html\b/i.test(accept);
}
