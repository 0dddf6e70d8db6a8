import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { WebhookAdminForbiddenError } from '../errors/webhook-trigger.errors.js';
import type { IncomingHttpHeaders } from 'node:http';
import { ADMIN_CROSS_SITE, ADMIN_READ_ONLY } from '../errors/webhook-trigger.messages.js';
import { ADMIN_SETTINGS, type ResolvedAdminSettings } from './admin-options.js';
import { isCrossSiteRequest } from './request-origin.js';

/** The header the screens send with every change; a cross-site form cannot set it, and fetch needs CORS to. */
const ADMIN_CHANGE_HEADER = 'x-webhook-admin';
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Runs after the host's guards (so a stranger gets the host's 401, not our 403), on every admin route:
 * - `readOnly`: every change is refused (403).
 * - CSRF, deny unless shown otherwise: a change whose only credential is `Authorization: Bearer …` (no cookie)
 *   passes, from a script or a screen on another origin alike: a page elsewhere cannot hold the token. Any other
 *   change is refused when the browser says another site sent it (`Sec-Fetch-Site`, else `Origin` against the
 *   Host), whatever it carries: the browser attaches more than cookies by itself (HTTP Basic, Negotiate, NTLM or
 *   Digest credentials it remembers, a TLS client certificate) and a host's guard may trust the network alone.
 *   A change with a credential in a header the browser attaches (a cookie, any `Authorization` but Bearer) must
 *   also carry `X-Webhook-Admin: 1`, which a cross-site form cannot set.
 */
@Injectable()
export class AdminChangeGuard implements CanActivate {
  constructor(@Inject(ADMIN_SETTINGS) private readonly settings: ResolvedAdminSettings) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ method: string; headers: IncomingHttpHeaders }>();
    if (READS.has(request.method)) return true;
    if (this.settings.readOnly) throw new WebhookAdminForbiddenError(ADMIN_READ_ONLY);
    const { headers } = request;
    if (bearerOnly(headers)) return true;
    if (isCrossSiteRequest(headers) || (carriesAmbientCredentials(headers) && headers[ADMIN_CHANGE_HEADER] !== '1')) {
      throw new WebhookAdminForbiddenError(ADMIN_CROSS_SITE);
    }
    return true;
  }
}

const BEARER = /^bearer\s/i;

/** A token in `Authorization: Bearer`, and no cookie: nothing a browser attaches by itself. */
function bearerOnly(headers: IncomingHttpHeaders): boolean {
  return headers.cookie === undefined && BEARER.test(headers.authorization ?? '');
}

/** A cookie, or credentials a browser remembers and resends (Basic, Negotiate, NTLM, Digest: any scheme but Bearer). */
function carriesAmbientCredentials(headers: IncomingHttpHeaders): boolean {
  return headers.cookie !== undefined || (headers.authorization !== undefined && !BEARER.test(headers.authorization));
}
