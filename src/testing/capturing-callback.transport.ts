import type { CallbackRequest, CallbackResult } from '../callbacks/callback-sender.js';
import { CallbackTransport } from '../callbacks/callback-transport.js';
import { Clock, SYSTEM_CLOCK } from '../time/clock.js';

/** A callback the module sent during a test, as its receiver would have got it. */
export interface CapturedCallback {
  url: string;
  /** The Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`) and Content-Type. */
  headers: Record<string, string>;
  /** The raw body, exactly as signed. */
  body: string;
  /** What the receiver answered (the status the spec chose). */
  answeredWith: number;
  /** When it was received, on the transport's clock (ms): the time a receiver checks its signature's timestamp at. */
  receivedAt: number;
}

/**
 * The testing kit's callback transport: nothing leaves the process. Each attempt is kept, in order, and
 * answered with the status a spec chose (200 by default), so a spec can see what would have been delivered
 * and drive the retries (a 500 now, a 200 after the clock moved).
 */
export class CapturingCallbackTransport extends CallbackTransport {
  readonly sent: CapturedCallback[] = [];
  private answer = 200;

  /** `clock`: the module's, so that `receivedAt` is on the test's time. */
  constructor(private readonly clock: Clock = SYSTEM_CLOCK) {
    super();
  }

  /** The status every following attempt is answered with (2xx delivered, 410 disables the callback, else retried). */
  answerWith(status: number): void {
    this.answer = status;
  }

  send(request: CallbackRequest): Promise<CallbackResult> {
    const status = this.answer;
    this.sent.push({
      url: request.url,
      headers: { ...request.headers },
      body: request.body.toString(),
      answeredWith: status,
      receivedAt: this.clock.now(),
    });
    const outcome = status >= 200 && status < 300 ? 'delivered' : status === 410 ? 'gone' : 'failed';
    return Promise.resolve({
      ok: outcome === 'delivered',
      outcome,
      status,
      latencyMs: 0,
      ...(outcome === 'failed' ? { error: `The receiver answered ${status}` } : {}),
    });
  }
}
