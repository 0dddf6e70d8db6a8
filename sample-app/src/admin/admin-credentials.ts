import { HttpException, HttpStatus, Inject, Injectable } from '@nestjs/common';
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { ADMIN_AUTH_OPTIONS, type AdminAuthOptions } from './admin-auth.options.js';
import { SignedOutSessions } from './signed-out-sessions.js';
import { WrongTokenLimiter } from './wrong-token-limiter.js';

/** The session cookie's name; it is sent to `/admin` paths only. */
export const SESSION_COOKIE = 'admin_session';
/** How long a session lasts from sign-in (12 h); also the cookie's Max-Age. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** A session issued this far in the future is still accepted: the clocks of scaled-out nodes differ a little. */
const CLOCK_SKEW_MS = 60_000;
const SESSION_FORMAT = /^v1\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/;

/** What the guard and the sign-in routes read from a request, on Express and Fastify alike. */
export interface AdminRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** Express and Fastify: the client address (after the adapter's trust-proxy setting). */
  ip?: string;
  /** Who the guard let in, as Passport would name them: what the library's audit log records. */
  user?: { id: string };
  /** Express and Fastify: `http` or `https`. */
  protocol?: string;
  socket?: { remoteAddress?: string };
}

/** 429 for a client that sent too many wrong admin tokens; the caller sets `Retry-After`. */
export class TooManyWrongTokensException extends HttpException {
  constructor(readonly retryAfterSeconds: number) {
    super(`Too many wrong admin tokens; try again in ${retryAfterSeconds} s`, HttpStatus.TOO_MANY_REQUESTS);
  }
}

const sha256 = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * ADMIN_TOKEN and the sessions signed with it. A session is stateless, `v1.<issuedAtMs>.<HMAC-SHA256(ADMIN_TOKEN,
 * "v1." + issuedAtMs) in base64url>`, so every node of a scaled-out sample app accepts it, and changing
 * ADMIN_TOKEN ends every session. Sign-out ends one session on the server too (SignedOutSessions).
 */
@Injectable()
export class AdminCredentials {
  private readonly tokenHash: Buffer;
  private readonly token: string;

  constructor(
    @Inject(ADMIN_AUTH_OPTIONS) options: AdminAuthOptions,
    private readonly limiter: WrongTokenLimiter,
    private readonly signedOut: SignedOutSessions,
  ) {
    this.token = options.adminToken;
    this.tokenHash = sha256(options.adminToken);
  }

  /**
   * Judges a presented token in constant time (both sides hashed to equal length), then lets the wrong-token
   * limit decide: throws `TooManyWrongTokensException` when the client has used up its wrong tokens (right
   * token or not), else answers whether the token was right.
   */
  judgeToken(request: AdminRequest, token: string): boolean {
    const right = timingSafeEqual(sha256(token), this.tokenHash);
    const wait = this.limiter.check(clientIp(request), !right);
    if (wait > 0) throw new TooManyWrongTokensException(wait);
    return right;
  }

  /** A new session cookie value, issued now. */
  newSession(now = Date.now()): string {
    return `v1.${now}.${this.sign(now)}`;
  }

  /**
   * True when the request carries an `admin_session` cookie this token signed less than 12 h ago and that was
   * not signed out.
   */
  async hasSession(request: AdminRequest, now = Date.now()): Promise<boolean> {
    for (const value of this.sessionsOf(request, now)) if (!(await this.signedOut.isEnded(value, now))) return true;
    return false;
  }

  /** Ends every valid session the request carries, on the server: a copy of the cookie no longer works. */
  async endSessions(request: AdminRequest, now = Date.now()): Promise<void> {
    for (const value of this.sessionsOf(request, now)) await this.signedOut.end(value, issuedAtOf(value) + SESSION_TTL_MS, now);
  }

  /** The request's `admin_session` values that this token signed less than 12 h ago. */
  private sessionsOf(request: AdminRequest, now: number): string[] {
    return cookieValues(request.headers.cookie, SESSION_COOKIE).filter((value) => this.sessionValid(value, now));
  }

  private sessionValid(value: string, now: number): boolean {
    const match = SESSION_FORMAT.exec(value);
    if (!match) return false;
    const issuedAt = Number(match[1]);
    if (!(issuedAt <= now + CLOCK_SKEW_MS && now - issuedAt < SESSION_TTL_MS)) return false;
    return timingSafeEqual(Buffer.from(match[2]), Buffer.from(this.sign(issuedAt)));
  }

  private sign(issuedAt: number): string {
    return createHmac('sha256', this.token).update(`v1.${issuedAt}`).digest('base64url');
  }
}

/** When a (valid) session value was issued, in ms. */
const issuedAtOf = (value: string): number => Number(SESSION_FORMAT.exec(value)?.[1] ?? 0);

/** The `Set-Cookie` value that starts a session (`Secure` when the request came over https). */
export function sessionCookie(value: string, request: AdminRequest): string {
  return `${SESSION_COOKIE}=${value}; Path=/admin; Max-Age=${SESSION_TTL_MS / 1000}; HttpOnly; SameSite=Strict${secure(request)}`;
}

/** The `Set-Cookie` value that ends the session. */
export function clearedSessionCookie(request: AdminRequest): string {
  return `${SESSION_COOKIE}=; Path=/admin; Max-Age=0; HttpOnly; SameSite=Strict${secure(request)}`;
}

const secure = (request: AdminRequest): string => (request.protocol === 'https' ? '; Secure' : '');

/** The client's address as the adapter sees it (its trust-proxy setting applies), as the library's failed-key limit does. */
export function clientIp(request: AdminRequest): string {
  return typeof request.ip === 'string' && request.ip !== '' ? request.ip : (request.socket?.remoteAddress ?? 'unknown');
}

/** Every value of cookie `name` in a `Cookie` header (a browser may send two with different paths). */
function cookieValues(header: string | undefined, name: string): string[] {
  if (header === undefined) return [];
  const values: string[] = [];
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) values.push(pair.slice(eq + 1).trim());
  }
  return values;
}
