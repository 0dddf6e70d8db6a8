import { Injectable } from '@nestjs/common';

/**
 * "This process is stopping", in one place: new triggers get 503, waiting sync requests are answered
 * 408 at once, timers stop, and running bots get their grace period (see `GracefulShutdown`).
 */
@Injectable()
export class ShutdownState {
  private readonly controller = new AbortController();

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

  /** Calls `task` every `ms` until shutdown begins; the timer never keeps the process alive. */
  every(ms: number, task: () => Promise<unknown> | void): void {
    if (this.isShuttingDown) return;
    const timer = setInterval(() => void task(), ms);
    timer.unref();
    this.signal.addEventListener('abort', () => clearInterval(timer), { once: true });
  }
}
