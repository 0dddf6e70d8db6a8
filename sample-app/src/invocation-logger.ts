import { Injectable, Logger } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { WEBHOOK_EVENTS, type InvocationEvent } from '../../src/index.js';

/**
 * Logs each run's state changes (`webhook-trigger.invocation.*`) at debug level. The events carry ids and
 * a status only: never keys or inputs, and nothing here adds them.
 */
@Injectable()
export class InvocationLogger {
  private readonly logger = new Logger('Invocations');

  // One decorator per event: an array given to @OnEvent is read by EventEmitter2 as one namespaced name.
  @OnEvent(WEBHOOK_EVENTS.queued)
  @OnEvent(WEBHOOK_EVENTS.started)
  @OnEvent(WEBHOOK_EVENTS.succeeded)
  @OnEvent(WEBHOOK_EVENTS.failed)
  onInvocation(event: InvocationEvent): void {
    const duration = event.durationMs === undefined ? '' : ` in ${event.durationMs} ms`;
    this.logger.debug(
      `${event.invocationId} ${event.status}${duration} (bot ${event.botId}, trigger ${event.triggerId}, account ${event.accountId})`,
    );
  }
}
