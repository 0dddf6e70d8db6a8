import { type CanActivate, type ExecutionContext, Injectable, NotFoundException, UnauthorizedException } from '@nestjs/common';
import { verifyTriggerKey } from '../keys/trigger-keys.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';
import { TRIGGER_ID_PATTERN } from '../webhook-trigger.constants.js';
import { INVALID_KEY, MISSING_KEY, UNKNOWN_TRIGGER } from '../webhook-trigger.messages.js';
import { AUTHENTICATED_TRIGGER, rawRequestOf } from './http.types.js';

/** `:triggerId` → the trigger (404), `X-Key` → checked in constant time (401); leaves the trigger on the request. */
@Injectable()
export class TriggerKeyGuard implements CanActivate {
  constructor(private readonly triggers: TriggerRepository) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<{ params: Record<string, string> }>();
    const triggerId = request.params.triggerId;
    // An id that cannot exist is not worth a query.
    const trigger = TRIGGER_ID_PATTERN.test(triggerId) ? await this.triggers.findActive(triggerId) : null;
    if (!trigger) throw new NotFoundException(UNKNOWN_TRIGGER(String(triggerId).slice(0, 64)));
    const raw = rawRequestOf(request);
    const presented = raw.headers['x-key']; // Node lower-cases header names: any spelling works
    if (typeof presented !== 'string' || presented === '') throw new UnauthorizedException(MISSING_KEY);
    if (!verifyTriggerKey(presented, trigger.keyHash)) throw new UnauthorizedException(INVALID_KEY);
    raw[AUTHENTICATED_TRIGGER] = trigger;
    return true;
  }
}
