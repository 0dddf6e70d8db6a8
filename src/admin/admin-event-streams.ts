import { Inject, Injectable, type MessageEvent, type OnModuleDestroy } from '@nestjs/common';
import { WebhookAdminUnavailableError } from '../errors/webhook-trigger.errors.js';
import type { Socket } from 'node:net';
import { Observable, type Subscriber } from 'rxjs';
import { ADMIN_TOO_MANY_STREAMS } from '../errors/webhook-trigger.messages.js';
import { ADMIN_SETTINGS, type ResolvedAdminSettings } from './admin-options.js';
import type { WebhookTriggersAdmin } from './webhook-triggers.admin.js';

/** How often an open stream gets a `ping` event, so proxies and the browser see it alive. */
const EVENT_STREAM_PING_MS = 15_000;

/**
 * The live history streams of this node: each one a watcher of run changes (through the cluster bus,
 * so runs on other nodes appear too), bounded by `maxEventStreams`, released when its client leaves, and
 * all ended when the app shuts down (an open stream would otherwise hold the HTTP server open).
 */
@Injectable()
export class AdminEventStreams implements OnModuleDestroy {
  /** Each open stream and its connection (ended at shutdown: a kept-alive socket would hold the server's close for seconds). */
  private readonly open = new Map<Subscriber<MessageEvent>, Socket | undefined>();

  constructor(@Inject(ADMIN_SETTINGS) private readonly settings: ResolvedAdminSettings) {}

  get count(): number {
    return this.open.size;
  }

  /** A stream of `invocation` events for `botId` (all bots when undefined); 503 beyond the limit. */
  stream(admin: WebhookTriggersAdmin, botId: string | undefined, socket?: Socket): Observable<MessageEvent> {
    if (this.open.size >= this.settings.maxEventStreams) {
      throw new WebhookAdminUnavailableError(ADMIN_TOO_MANY_STREAMS(this.settings.maxEventStreams));
    }
    return new Observable<MessageEvent>((subscriber) => {
      this.open.set(subscriber, socket);
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

  async onModuleDestroy(): Promise<void> {
    if (this.open.size === 0) return;
    const sockets = [...this.open.values()];
    for (const subscriber of [...this.open.keys()]) subscriber.complete();
    await new Promise((resolve) => setTimeout(resolve, 20)); // the streams' last bytes go out
    for (const socket of sockets) socket?.end();
  }
}
