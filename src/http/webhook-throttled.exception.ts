import { HttpException, HttpStatus } from '@nestjs/common';
import { RATE_LIMITED } from '../webhook-trigger.messages.js';

/** 429 that carries its `Retry-After` (seconds); the exception filter sets the header. */
export class WebhookThrottledException extends HttpException {
  constructor(scope: 'trigger' | 'account', readonly retryAfterSeconds: number) {
    super(RATE_LIMITED(scope), HttpStatus.TOO_MANY_REQUESTS);
  }
}
