import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { EVENTS_WITHOUT_EMITTER } from '../errors/webhook-trigger.messages.js';
import { LOG_CONTEXT } from '../options/module.constants.js';
import { HOST_EVENT_EMITTER, type HostEventEmitter } from './host-event-emitter.js';

/** Where `@OnEvent()` of @nestjs/event-emitter (every major) keeps its events, on the handler method. */
const EVENT_LISTENER_METADATA = 'EVENT_LISTENER_METADATA';
/** The prefix of every event the module emits (WEBHOOK_EVENTS, CALLBACK_DISABLED_EVENT). */
const OUR_EVENTS = 'webhook-trigger.';

/**
 * Warns once at startup when the host listens to the module's events with `@OnEvent()` but imported no
 * `EventEmitterModule.forRoot()`: the module then has no emitter and the listeners are silently never called.
 * Only then: an app that does not listen to our events hears nothing, and the scan runs only without an emitter.
 */
@Injectable()
export class EventListenersHint implements OnApplicationBootstrap {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    @Inject(HOST_EVENT_EMITTER) private readonly emitter: HostEventEmitter | null,
  ) {}

  onApplicationBootstrap(): void {
    if (this.emitter !== null) return;
    const listener = this.firstListener();
    if (listener !== undefined) this.logger.warn(EVENTS_WITHOUT_EMITTER(listener));
  }

  /** `Class.method` of the first `@OnEvent()` handler of one of the module's events, if any. */
  private firstListener(): string | undefined {
    for (const { instance } of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      if (typeof instance !== 'object' || instance === null) continue;
      const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = prototype[name];
        if (typeof handler !== 'function') continue;
        const listens = this.reflector.get<Array<{ event?: unknown }> | undefined>(EVENT_LISTENER_METADATA, handler);
        if (listens?.some(({ event }) => isOurs(event))) return `${(instance as object).constructor.name}.${name}`;
      }
    }
    return undefined;
  }
}

function isOurs(event: unknown): boolean {
  return Array.isArray(event) ? event.some(isOurs) : typeof event === 'string' && event.startsWith(OUR_EVENTS);
}
