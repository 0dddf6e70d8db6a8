import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { WebhookAdminForbiddenError } from '../errors/webhook-trigger.errors.js';
import type { IncomingHttpHeaders } from 'node:http';
import { ADMIN_CROSS_SITE, ADMIN_READ_ONLY } from '../errors/webhook-trigger.messages.js';
import { ADMIN_SETTINGS, type ResolvedAdminSettings } from './admin-options.js';
import { isCrossSiteRequest } from './request-origin.js';

/** The header the screens send with every change; a cross-site form cannot set it, and fetch needs CORS to. */
export const ADMIN_CHANGE_HEADER = 'x-webhook-admin';
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Runs after the host's guards (so a stranger gets the host's 401, not our 403), on every admin route:
 * - `readOnly`: every change is refused (403).
 * - CSRF: a change that carries a credential the browser attaches by itself (a cookie, or HTTP Basic
 *   credentials it remembers), and so would attach to a forged cross-site request too, must carry
 *   `X-Webhook-Admin: 1` and must not come from another site (`Sec-Fetch-Site`, else `Origin` against the
 *   Host). Token clients (`Authorization: Bearer …`, no cookie) are not affected.
 */
@Injectable()
export class AdminChangeGuard implements CanActivate {
  constructor(@Inject(ADMIN_SETTINGS) private readonly settings: ResolvedAdminSettings) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ method: string; headers: IncomingHttpHeaders }>();
    if (READS.has(request.method)) return true;
    if (this.settings.readOnly) throw new WebhookAdminForbiddenError(ADMIN_READ_ONLY);
    if (carriesAmbientCredentials(request.headers) && !sameSiteChange(request.headers))
      throw new WebhookAdminForbiddenError(ADMIN_CROSS_SITE);
    return true;
  }
}

function carriesAmbientCredentials(headers: IncomingHttpHeaders): boolean {
  return headers.cookie !== undefined || /^basic\s/i.test(headers.authorization ?? '');
}

function sameSiteChange(headers: IncomingHttpHeaders): boolean {
  return headers[ADMIN_CHANGE_HEADER] === '1' && !isCrossSiteRequest(headers);
}
