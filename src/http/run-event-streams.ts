import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { ShuttingDownError, UnknownInvocationError } from '../errors/webhook-trigger.errors.js';
import { HeldShares } from '../rate-limits/held-shares.js';
import { LOG_EVENT_STREAM_READ_FAILED, TOO_MANY_EVENT_STREAMS, TOO_MANY_EVENT_STREAMS_OF } from '../errors/webhook-trigger.messages.js';
import { InvocationChanges, type RunWatch } from '../invocations/invocation-changes.js';
import { InvocationService } from '../invocations/invocation.service.js';
import { ShutdownState } from '../lifecycle/shutdown.state.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { TERMINAL_STATUSES, type TriggerRecord } from '../persistence/records.js';
import { onClientGone } from './client-gone.js';
import { formatEvent, runEvents } from './run-event-log.js';

/** How often an open stream gets a `: keepalive` comment, so proxies and clients see it alive. */
export const RUN_STREAM_KEEPALIVE_MS = 15_000;
/**
 * One extra read this long after the stream's bus watch is in place: with Redis, a worker starts
 * announcing changes once it has heard that someone watches, a few milliseconds after the stream
 * opened; a change in that window would otherwise wait for the run's next change. Once, not a poll.
 */
const SETTLE_READ_MS = 1_000;

const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no', // nginx: pass each event on at once
  // The socket is closed with the stream: an idle kept-alive connection would hold the server's close.
  connection: 'close',
};

interface OpenStream {
  end(): void;
}

/**
 * The run event streams of this process (`GET …/invocation/{id}/events`): each one replays the run's
 * history after the client's last event id, then sends what is new each time the run changes, read
 * from the row when the cluster bus says it changed (no polling), and ends after `done`. Bounded by
 * `maxEventStreams`, and per trigger and per account below it (HeldShares); all ended when shutdown
 * begins, so a client reconnects to another node.
 */
@Injectable()
export class RunEventStreams implements OnModuleDestroy {
  private readonly logger = new Logger(LOG_CONTEXT);
  private readonly open = new Set<OpenStream>();
  private readonly shares: HeldShares;

  constructor(
    private readonly invocations: InvocationService,
    private readonly changes: InvocationChanges,
    @Inject(RESOLVED_OPTIONS) options: ResolvedWebhookTriggerOptions,
    private readonly shutdown: ShutdownState,
  ) {
    this.shares = new HeldShares(
      { total: options.maxEventStreams, perTrigger: options.maxEventStreamsPerTrigger, perAccount: options.maxEventStreamsPerAccount },
      {
        ofTrigger: TOO_MANY_EVENT_STREAMS_OF('trigger', options.maxEventStreamsPerTrigger, 'maxEventStreamsPerTrigger'),
        ofAccount: TOO_MANY_EVENT_STREAMS_OF('account', options.maxEventStreamsPerAccount, 'maxEventStreamsPerAccount'),
        ofProcess: TOO_MANY_EVENT_STREAMS(options.maxEventStreams),
      },
    );
    shutdown?.signal.addEventListener('abort', () => this.endAll(), { once: true });
  }

  /** Streams open in this process. */
  get count(): number {
    return this.open.size;
  }

  /**
   * Everything that can refuse the stream (503 shutting down or too many streams, 404) is decided before
   * `begin()` and before a byte is written; `begin()` takes the response over (Fastify: hijack).
   * Resolves once the stream is set up; the stream then lives on by itself.
   */
  async serve(trigger: TriggerRecord, invocationId: string, after: number, response: ServerResponse, begin: () => void): Promise<void> {
    if (this.shutdown.isShuttingDown) throw new ShuttingDownError();
    // The slot is taken now, so concurrent opens never exceed a bound.
    const release = this.shares.take(trigger);
    let lastId = after;
    let ended = false;
    let reading = false;
    let again = false;
    /** Set once the head and the first events are written; a change heard before that is read after. */
    let live = false;
    let missed = false;
    let keepalive: NodeJS.Timeout | undefined;
    let settle: NodeJS.Timeout | undefined;
    let watch: RunWatch | undefined = undefined;
    const stream: OpenStream = { end: () => finish() };
    const finish = () => {
      if (ended) return;
      ended = true;
      this.open.delete(stream);
      release();
      watch?.stop();
      clearInterval(keepalive);
      clearTimeout(settle);
      if (!response.writableEnded) response.end();
    };
    /** Sends the events after `lastId`; true once the run is finished (`done` sent). */
    const send = (row: Parameters<typeof runEvents>[0]): boolean => {
      let chunk = '';
      for (const event of runEvents(row)) {
        if (event.id <= lastId) continue;
        chunk += formatEvent(event);
        lastId = event.id;
      }
      if (chunk) response.write(chunk);
      return TERMINAL_STATUSES.has(row.status);
    };
    const read = async (): Promise<void> => {
      if (ended) return;
      if (!live) {
        missed = true;
        return;
      }
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      try {
        do {
          again = false;
          const row = await this.invocations.find(trigger, invocationId);
          if (ended) return;
          if (!row || send(row)) return finish();
        } while (again);
      } catch (error) {
        // The client resumes with Last-Event-ID, here or on another node.
        this.logger.warn(LOG_EVENT_STREAM_READ_FAILED(invocationId, String(error)));
        finish();
      } finally {
        reading = false;
      }
    };

    this.open.add(stream);
    try {
      // Watch BEFORE reading the row: a change between the read and the watch would otherwise be missed.
      watch = this.changes.watch(invocationId, () => void read());
      const row = await this.invocations.find(trigger, invocationId);
      if (!row) throw new UnknownInvocationError(invocationId);
      if (this.shutdown.isShuttingDown) throw new ShuttingDownError();
      const finished = TERMINAL_STATUSES.has(row.status);
      begin();
      if (finished && runEvents(row).every((e) => e.id <= after)) {
        // Nothing left to say: 204 also tells a browser's EventSource to stop reconnecting.
        response.writeHead(204, { connection: 'close' });
        return finish();
      }
      response.on('error', () => undefined); // a client that drops is not an error
      onClientGone(response, finish);
      if (ended) return; // it left while the guards or the read awaited
      response.writeHead(200, STREAM_HEADERS);
      if (send(row)) return finish();
      keepalive = setInterval(() => response.write(': keepalive\n\n'), RUN_STREAM_KEEPALIVE_MS);
      keepalive.unref();
      live = true;
      if (missed) void read();
      void watch.ready.then(() => read());
      settle = setTimeout(() => void read(), SETTLE_READ_MS);
      settle.unref();
    } catch (error) {
      if (!response.headersSent) {
        // Refused before anything was written: the slot and the watch are released, the filter answers.
        ended = true;
        this.open.delete(stream);
        release();
        watch?.stop();
        throw error;
      }
      finish();
    }
  }

  private endAll(): void {
    for (const stream of [...this.open]) stream.end();
  }

  onModuleDestroy(): void {
    this.endAll();
  }
}
