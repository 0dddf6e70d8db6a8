import { Inject, Injectable, type MessageEvent, type OnModuleDestroy, ServiceUnavailableException } from '@nestjs/common';
import { Observable, type Subscriber } from 'rxjs';
import { ADMIN_TOO_MANY_STREAMS } from '../errors/webhook-trigger.messages.js';
import { ADMIN_SETTINGS, type ResolvedAdminSettings } from './admin-options.js';
import type { WebhookTriggersAdmin } from './webhook-triggers.admin.js';

/** How often an open stream gets a `ping` event, so proxies and the browser see it alive. */
export const EVENT_STREAM_PING_MS = 15_000;

/**
 * The live history streams of this node: each one a watcher of run changes (through the completion bus,
 * so runs on other nodes appear too), bounded by `maxEventStreams`, released when its client leaves, and
 * all ended when the app shuts down (an open stream would otherwise hold the HTTP server open).
 */
@Injectable()
export class AdminEventStreams implements OnModuleDestroy {
  private readonly open = new Set<Subscriber<MessageEvent>>();

  constructor(@Inject(ADMIN_SETTINGS) private readonly settings: ResolvedAdminSettings) {}

  get count(): number {
    return this.open.size;
  }

  /** A stream of `invocation` events for `botId` (all bots when undefined); 503 beyond the limit. */
  stream(admin: WebhookTriggersAdmin, botId: string | undefined): Observable<MessageEvent> {
    if (this.open.size >= this.settings.maxEventStreams) {
      throw new ServiceUnavailableException(ADMIN_TOO_MANY_STREAMS(this.settings.maxEventStreams));
    }
    return new Observable<MessageEvent>((subscriber) => {
      this.open.add(subscriber);
      const stop = admin.watchRuns(botId, (change) => subscriber.next({ type: 'invocation', data: change }));
      const ping = setInterval(() => subscriber.next({ type: 'ping', data: '' }), EVENT_STREAM_PING_MS);
      ping.unref();
      return () => {
        this.open.delete(subscriber);
        stop();
        clearInterval(ping);
      };
    });
  }

  onModuleDestroy(): void {
    for (const subscriber of [...this.open]) subscriber.complete();
  }
}
