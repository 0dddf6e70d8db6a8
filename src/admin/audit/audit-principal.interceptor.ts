import { type CallHandler, type ExecutionContext, Inject, Injectable, type NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import { ADMIN_SETTINGS, type ResolvedAdminSettings } from '../admin-options.js';
import { AuditContext, principalFromUser } from './audit-context.js';

/**
 * Runs each admin API request's handler inside `AuditContext.run(principal, …)`: the principal is read after the
 * host's guards ran (they put the user on the request), with the `auditPrincipal` setting or from `request.user`.
 * The handler is subscribed inside `run`, so everything it awaits sees the principal.
 */
@Injectable()
export class AuditPrincipalInterceptor implements NestInterceptor {
  constructor(@Inject(ADMIN_SETTINGS) private readonly settings: ResolvedAdminSettings) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<unknown>();
    const read = this.settings.auditPrincipal ?? principalFromUser;
    let principal: string | null | undefined;
    try {
      principal = read(request);
    } catch {
      principal = null; // a host's reader that throws must not turn every admin change into a 500
    }
    return new Observable((subscriber) => AuditContext.run(principal, () => next.handle().subscribe(subscriber)));
  }
}
