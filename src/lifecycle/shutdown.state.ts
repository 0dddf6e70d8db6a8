import { Injectable } from '@nestjs/common';
import { Clock } from '../time/clock.js';

/**
 * "This process is stopping", in one place: new triggers get 503, waiting sync requests are answered
 * 408 at once, timers stop, and running bots get their grace period (see `GracefulShutdown`).
 */
@Injectable()
export class ShutdownState {
  private readonly controller = new AbortController();

  constructor(private readonly clock: Clock) {}

  get isShuttingDown(): boolean {
    return this.controller.signal.aborted;
  }

  /** Fires once, when shutdown begins. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  begin(): void {
    if (!this.controller.signal.aborted) this.controller.abort();
  }

  /** Calls `task` every `ms` (on the module's clock) until shutdown begins; the timer never keeps the process alive. */
  every(ms: number, task: () => Promise<unknown> | void): void {
    if (this.isShuttingDown) return;
    const timer = this.clock.setRepeating(() => void task(), ms);
    this.signal.addEventListener('abort', () => timer.clear(), { once: true });
  }
}
