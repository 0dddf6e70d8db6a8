import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { TriggerRecord } from '../persistence/records.js';
import { AUTHENTICATED_TRIGGER, rawRequestOf } from './http.types.js';

/** The trigger that `TriggerKeyGuard` authenticated for this request. */
export const CurrentTrigger = createParamDecorator(
  (_: unknown, context: ExecutionContext): TriggerRecord => rawRequestOf(context.switchToHttp().getRequest())[AUTHENTICATED_TRIGGER]!,
);
