import { HttpException, HttpStatus } from '@nestjs/common';
import { RATE_LIMITED } from './webhook-trigger.messages.js';

/** 429 that carries its `Retry-After` (seconds); the exception filter sets the header. */
export class WebhookThrottledException extends HttpException {
  constructor(scope: 'trigger' | 'account' | 'client', readonly retryAfterSeconds: number, message = RATE_LIMITED(scope)) {
    super(message, HttpStatus.TOO_MANY_REQUESTS);
  }
}
