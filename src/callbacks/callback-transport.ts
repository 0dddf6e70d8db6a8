import { Injectable } from '@nestjs/common';
import { type CallbackRequest, type CallbackResult, sendCallback } from './callback-sender.js';

/**
 * How one callback attempt reaches its receiver: the request (URL, Standard Webhooks headers, body, timeout,
 * allowed hosts) in, how it went out. Never throws: every outcome is a result for the delivery log. Replaced
 * with the `callbackTransport` extra, e.g. by the testing kit, which captures deliveries instead of sending them.
 */
export abstract class CallbackTransport {
  abstract send(request: CallbackRequest): Promise<CallbackResult>;
}

/** The default: a POST over HTTP(S), SSRF-safe (`sendCallback`: public addresses only unless allowed). */
@Injectable()
export class HttpCallbackTransport extends CallbackTransport {
  send(request: CallbackRequest): Promise<CallbackResult> {
    return sendCallback(request);
  }
}
