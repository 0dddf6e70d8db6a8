import { RequestTimeoutException } from '@nestjs/common';
import type { InvocationStatus } from '../persistence/records.js';

/** 408 that tells the caller where the run is; the exception filter adds `status` to the body. */
export class WebhookSyncTimeoutException extends RequestTimeoutException {
  constructor(message: string, readonly invocationStatus: InvocationStatus) {
    super(message);
  }
}
