import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis as RedisClient } from 'ioredis';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { CANNOT_CONNECT } from '../errors/webhook-trigger.messages.js';
import { createRedisClient, redactRedisUrl } from './ioredis.js';
import { InMemoryClusterBus } from '../cluster/in-memory-cluster.bus.js';
import type { RunChange } from '../cluster/cluster-bus.js';
import { Batcher } from '../batching/batcher.js';
import type { ServiceCheck } from '../health/service-check.js';

/** Said on the finished channel by a process that watches run changes (never an invocation id). */
const WATCHING = 'watching';
const WATCHING_BEAT_MS = 20_000;
const WATCHING_HEARD_MS = 60_000;
/** Most ids in one "finished" message (~25 bytes each). */
const FINISHED_BATCH = 500;

/**
 * Carries "invocation X finished" between processes over Redis pub/sub, so a sync request waiting on
 * one node is answered within milliseconds of a run finishing on another. Needs the `redis` option and
 * `ioredis@5`.
 *
 * - ONE channel per app (`${keyPrefix}invocation-finished`), subscribed once per process at module
 *   init; the message is invocation ids, nothing else (waiters re-read the row): the runs that finished
 *   while one PUBLISH was in flight (or in the same event-loop turn) go in the next, one id per line, so
 *   under load a node publishes a fraction of a message per run. No per-id SUBSCRIBE, and no database
 *   polling: a waiter sleeps until the message or its timeout. (A message of one id is all that earlier
 *   versions sent and read; during a rolling deploy from one, its waiters miss the ids of a message of
 *   several and answer at their timeout, after re-reading the row: 200 for a finished run.)
 * - Two connections: a connection in subscriber mode cannot PUBLISH.
 * - Local waiters are woken at once by `publish` (no Redis round trip for a run that finished on this
 *   node, and no dependence on Redis for it). The echo of our own message then finds their ids already
 *   removed; an id is removed from the map when it is dispatched, so each listener is called at most once.
 *   A waiter that subscribed between the local wake and the echo is woken by the echo: harmless, the run
 *   did finish and the waiter re-reads a terminal row.
 * - If Redis is briefly unreachable, ioredis reconnects and re-subscribes by itself (`autoResubscribe`).
 *   A message published during the outage is lost (pub/sub does not store): a remote waiter that missed
 *   it is answered at its timeout (after a final re-read of the row it answers 200 if the run finished,
 *   408 otherwise), and the caller calls sync again, which reads the finished row at once. A failed
 *   PUBLISH is logged and never fails the run's bookkeeping.
 * - Run changes for live history (`announce`) go on a second channel (`${keyPrefix}invocation-changed`,
 *   JSON `{ invocationId, botId, triggerId, status }`), published without waiting, and only while some
 *   process watches: a process with a watcher (an open admin history stream) subscribes to that channel
 *   and says `WATCHING` on the finished channel (every process hears it) at once and every 20 s; a
 *   process publishes changes for 60 s after it last heard it. So an app nobody watches sends nothing
 *   more per run. Lost messages only make a screen miss a live update.
 * - Trigger changes (key rotated, trigger deleted or created through the admin service) go on a third
 *   channel (`${keyPrefix}trigger-changed`, the trigger id), subscribed by every process at init: each
 *   process's trigger cache drops the trigger when it hears it. `carriesTriggerChanges` is true only while
 *   that subscription is in place: when the subscriber's connection closes, caches are cleared and not
 *   used; once it is subscribed again they are cleared once more (what was said meanwhile is lost) and
 *   used again. A failed PUBLISH is logged: other processes then drop the trigger at their cache's TTL.
 */
@Injectable()
export class RedisClusterBus extends InMemoryClusterBus implements OnModuleInit, OnApplicationShutdown {
  /** Read by the option checks: choosing this class requires the `redis` option. */
  static readonly requiresRedis = true;
  private readonly logger = new Logger(LOG_CONTEXT);
  private readonly url: string;
  private readonly channel: string;
  private readonly changeChannel: string;
  private readonly triggerChannel: string;
  /** The trigger channel is subscribed on the current connection: trigger caches may be used. */
  private hearsTriggerChanges = false;
  /** Set once the first SUBSCRIBE succeeded: later `ready` events are reconnections. */
  private subscribedOnce = false;
  /** Until when some process watches run changes (as last heard on the finished channel). */
  private watchedUntil = 0;
  private watchingBeat?: NodeJS.Timeout;
  /** Settles once the change channel is subscribed and `WATCHING` was said (first watcher). */
  private watching: Promise<void> = Promise.resolve();
  private subscriber?: RedisClient;
  private publisher?: RedisClient;
  /** Finished ids waiting for the next PUBLISH (one in flight per process). */
  private readonly finished = new Batcher<string, void>((ids) => this.publishFinished(ids), FINISHED_BATCH);

  constructor(@Inject(RESOLVED_OPTIONS) options: ResolvedWebhookTriggerOptions) {
    super();
    const redis = options.redis!; // checked at bootstrap (requiresRedis)
    this.url = redis.url;
    this.channel = `${redis.keyPrefix}invocation-finished`;
    this.changeChannel = `${redis.keyPrefix}invocation-changed`;
    this.triggerChannel = `${redis.keyPrefix}trigger-changed`;
  }

  /** Connects both clients and awaits the SUBSCRIBE, so the app never serves before it hears messages. */
  async onModuleInit(): Promise<void> {
    // Publisher without an offline queue: while Redis is down a PUBLISH fails at once (logged) instead of
    // holding up the run that finished until Redis is back.
    this.publisher = createRedisClient('RedisClusterBus', this.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      connectionName: 'webhook-triggers:bus-pub',
      // The runs finished in one event-loop turn are published in one socket write.
      enableAutoPipelining: true,
    });
    this.subscriber = createRedisClient('RedisClusterBus', this.url, {
      lazyConnect: true,
      autoResubscribe: true,
      connectionName: 'webhook-triggers:bus-sub',
    });
    for (const client of [this.publisher, this.subscriber]) {
      client.on('error', (error: Error) => this.logger.warn(`Redis cluster bus: ${error.message}`));
    }
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel && message === WATCHING) this.watchedUntil = Date.now() + WATCHING_HEARD_MS;
      else if (channel === this.channel) for (const invocationId of message.split('\n')) this.wakeLocal(invocationId);
      else if (channel === this.changeChannel) this.receiveChange(message);
      else if (channel === this.triggerChannel) this.notifyTriggerChanged(message);
    });
    this.subscriber.on('close', () => this.triggerChangesLost());
    this.subscriber.on('ready', () => {
      if (this.subscribedOnce) void this.resumeTriggerChanges();
    });
    try {
      await Promise.all([this.publisher.connect(), this.subscriber.connect()]);
      await this.subscriber.subscribe(this.channel, this.triggerChannel);
      this.subscribedOnce = true;
      this.hearsTriggerChanges = true;
    } catch (error) {
      this.close();
      throw new WebhookConfigurationError(CANNOT_CONNECT('RedisClusterBus', redactRedisUrl(this.url), (error as Error).message));
    }
  }

  /** The bus's Redis, pinged on the publisher's connection. */
  override serviceChecks(): readonly ServiceCheck[] {
    return [{ service: 'redis', part: 'RedisClusterBus', ping: () => this.publisher!.ping() }];
  }

  override async publish(invocationId: string): Promise<void> {
    this.wakeLocal(invocationId);
    if (!this.publisher) return;
    try {
      await this.finished.push(invocationId);
    } catch (error) {
      this.logger.warn(
        `Redis cluster bus: could not publish "${invocationId}" finished (${(error as Error).message}); remote waiters answer at their timeout`,
      );
    }
  }

  /** One PUBLISH for the ids of a batch, one per line. */
  private async publishFinished(invocationIds: string[]): Promise<void[]> {
    if (!this.publisher) return invocationIds.map(() => undefined);
    await this.publisher.publish(this.channel, invocationIds.join('\n'));
    return invocationIds.map(() => undefined);
  }

  /** Local watchers hear it from the echo of the channel (at most a millisecond later), so once each. */
  override announce(change: RunChange): void {
    if (!this.publisher) return this.notifyChangeWatchers(change);
    if (Date.now() > this.watchedUntil) return;
    this.publisher.publish(this.changeChannel, JSON.stringify(change)).catch((error: Error) => {
      this.logger.debug(`Redis cluster bus: could not announce a change of "${change.invocationId}" (${error.message})`);
    });
  }

  override async announceTriggerChanged(triggerId: string): Promise<void> {
    this.notifyTriggerChanged(triggerId);
    if (!this.publisher) return;
    try {
      await this.publisher.publish(this.triggerChannel, triggerId);
    } catch (error) {
      this.logger.warn(
        `Redis cluster bus: could not announce that trigger "${triggerId}" changed (${(error as Error).message}); other processes may use their cached copy until its triggerCacheTtlMs runs out`,
      );
    }
  }

  override get carriesTriggerChanges(): boolean {
    return this.hearsTriggerChanges;
  }

  /** The subscriber's connection closed: whatever is said until it is back is lost to this process. */
  private triggerChangesLost(): void {
    if (!this.hearsTriggerChanges) return;
    this.hearsTriggerChanges = false;
    this.notifyTriggerChanged(null);
  }

  /**
   * After a reconnection. ioredis re-subscribes by itself, but only after emitting `ready`; our own
   * SUBSCRIBE (a no-op for a channel already subscribed) tells when the channel is heard again, and only
   * then may caches be used, starting empty.
   */
  private async resumeTriggerChanges(): Promise<void> {
    try {
      await this.subscriber?.subscribe(this.triggerChannel);
    } catch (error) {
      this.logger.warn(`Redis cluster bus: could not subscribe to trigger changes again (${(error as Error).message})`);
      return;
    }
    if (!this.subscriber || this.subscriber.status !== 'ready') return;
    this.hearsTriggerChanges = true;
    this.notifyTriggerChanged(null);
  }

  protected override firstChangeWatcher(): void {
    const say = async () => {
      await this.publisher?.publish(this.channel, WATCHING).catch(() => undefined);
    };
    const sayWatching = () => void say();
    this.watching = (this.subscriber?.subscribe(this.changeChannel) ?? Promise.resolve())
      .then(say)
      .catch((error: Error) => this.logger.warn(`Redis cluster bus: could not subscribe to run changes (${error.message})`));
    this.watchingBeat = setInterval(sayWatching, WATCHING_BEAT_MS);
    this.watchingBeat.unref();
  }

  override whenWatching(): Promise<void> {
    return this.watching;
  }

  protected override lastChangeWatcherGone(): void {
    clearInterval(this.watchingBeat);
    this.subscriber?.unsubscribe(this.changeChannel).catch(() => undefined);
  }

  private receiveChange(message: string): void {
    let change: RunChange;
    try {
      change = JSON.parse(message) as RunChange;
    } catch {
      return;
    }
    if (typeof change?.invocationId === 'string') this.notifyChangeWatchers(change);
  }

  /**
   * After every onModuleDestroy (where runs in their shutdown grace still finish and publish), before
   * nothing else needs the bus.
   */
  onApplicationShutdown(): void {
    this.close();
  }

  private close(): void {
    clearInterval(this.watchingBeat);
    this.triggerChangesLost();
    // disconnect(), not quit(): nothing is pending that must be flushed, and quit() waits on a dead server.
    this.publisher?.disconnect();
    this.subscriber?.disconnect();
    this.publisher = undefined;
    this.subscriber = undefined;
  }
}
