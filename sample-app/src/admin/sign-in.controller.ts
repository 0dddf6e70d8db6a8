import { Body, Controller, Get, HttpStatus, Post, Req, Res } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ApiExcludeController } from '@nestjs/swagger';
import { isCrossSiteRequest } from '../../../src/index.js';
import {
  AdminCredentials,
  type AdminRequest,
  clearedSessionCookie,
  sessionCookie,
  TooManyWrongTokensException,
} from './admin-credentials.js';
import { SIGN_IN_PATH } from './admin.guard.js';
import { CROSS_SITE_TEXT, SIGN_IN_CSP, SIGN_IN_CSS, signInPage, WRONG_TOKEN_TEXT } from './sign-in.page.js';

/** Headers of every answer of the sign-in page. */
const PAGE_HEADERS: Record<string, string> = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': SIGN_IN_CSP,
  'Cache-Control': 'no-store',
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/**
 * Browser sign-in for the admin screens (no guard: this is how a browser gets past it). A right token sets the
 * `admin_session` cookie and goes to /admin; a wrong one shows the form again with "Wrong admin token." and
 * counts towards the per-IP limit on wrong tokens. Answers through the HTTP adapter, on Express and Fastify.
 * The form body (application/x-www-form-urlencoded) is parsed by the adapter; the sample app bounds it (main.ts).
 * Both forms refuse a post from a page of another site (403, `isCrossSiteRequest`, the admin API's own check):
 * elsewhere, a page could otherwise spend the admin's wrong-token allowance (locking their address out) or sign
 * them out. Sign-out ends the session on the server, not only the cookie.
 */
@ApiExcludeController()
@Controller('admin')
export class SignInController {
  constructor(
    private readonly credentials: AdminCredentials,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  @Get('sign-in')
  async page(@Req() request: AdminRequest, @Res() response: unknown): Promise<void> {
    this.reply(response, HttpStatus.OK, signInPage({ signedIn: await this.credentials.hasSession(request) }), PAGE_HEADERS);
  }

  @Get('sign-in.css')
  stylesheet(@Res() response: unknown): void {
    this.reply(response, HttpStatus.OK, SIGN_IN_CSS, {
      'Content-Type': 'text/css; charset=utf-8',
      'Cache-Control': 'no-cache',
      'X-Content-Type-Options': 'nosniff',
    });
  }

  @Post('sign-in')
  signIn(@Req() request: AdminRequest, @Body() body: unknown, @Res() response: unknown): void {
    // Before the token is judged: a forged post must not count as a wrong token of the admin's address.
    if (isCrossSiteRequest(request.headers)) return this.refuseCrossSite(response);
    const given = (body as { token?: unknown } | undefined)?.token;
    const token = typeof given === 'string' ? given : '';
    let right: boolean;
    try {
      right = this.credentials.judgeToken(request, token);
    } catch (e) {
      if (!(e instanceof TooManyWrongTokensException)) throw e;
      return this.reply(response, HttpStatus.TOO_MANY_REQUESTS, signInPage({ error: e.message }), {
        ...PAGE_HEADERS,
        'Retry-After': String(e.retryAfterSeconds),
      });
    }
    if (!right) return this.reply(response, HttpStatus.UNAUTHORIZED, signInPage({ error: WRONG_TOKEN_TEXT }), PAGE_HEADERS);
    this.adapter.setHeader(response, 'Set-Cookie', sessionCookie(this.credentials.newSession(), request));
    this.adapter.setHeader(response, 'Cache-Control', 'no-store');
    this.adapter.redirect(response, HttpStatus.SEE_OTHER, '/admin');
  }

  @Post('sign-out')
  async signOut(@Req() request: AdminRequest, @Res() response: unknown): Promise<void> {
    if (isCrossSiteRequest(request.headers)) return this.refuseCrossSite(response);
    await this.credentials.endSessions(request);
    this.adapter.setHeader(response, 'Set-Cookie', clearedSessionCookie(request));
    this.adapter.setHeader(response, 'Cache-Control', 'no-store');
    this.adapter.redirect(response, HttpStatus.SEE_OTHER, SIGN_IN_PATH);
  }

  private refuseCrossSite(response: unknown): void {
    this.reply(response, HttpStatus.FORBIDDEN, signInPage({ error: CROSS_SITE_TEXT }), PAGE_HEADERS);
  }

  private reply(response: unknown, status: number, body: string, headers: Record<string, string>): void {
    for (const [name, value] of Object.entries(headers)) this.adapter.setHeader(response, name, value);
    this.adapter.reply(response, body, status);
  }

  private get adapter() {
    return this.adapterHost.httpAdapter;
  }
}
