import type { Provider } from '@nestjs/common';

/** Injection token of the host's EventEmitter2, or null when the app has none. */
export const HOST_EVENT_EMITTER = Symbol('WEBHOOK_HOST_EVENT_EMITTER');

/** What the module needs of the host's `EventEmitter2`. */
export interface HostEventEmitter {
  emit(event: string, payload: unknown): unknown;
  /** Calls every listener now; answers what they answered, settled together (`false` when there are none). */
  emitAsync?(event: string, payload: unknown): Promise<unknown[]> | false;
}

/**
 * The host's `EventEmitter2` (from `EventEmitterModule.forRoot()`), injected when the app has one. The
 * optional peer @nestjs/event-emitter is loaded only to name its class as the token; an app without the
 * package, or without the module, gets null, and the module then emits nothing.
 */
export function hostEventEmitterProvider(): Provider {
  let EventEmitter2: unknown;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the optional peer, loaded only if installed
    EventEmitter2 = (require('@nestjs/event-emitter') as { EventEmitter2?: unknown }).EventEmitter2;
  } catch {
    EventEmitter2 = undefined;
  }
  if (typeof EventEmitter2 !== 'function') return { provide: HOST_EVENT_EMITTER, useValue: null };
  return {
    provide: HOST_EVENT_EMITTER,
    inject: [{ token: EventEmitter2 as new () => HostEventEmitter, optional: true }],
    useFactory: (emitter?: HostEventEmitter) => emitter ?? null,
  };
}
