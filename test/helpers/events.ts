import { EventEmitter2 } from '@nestjs/event-emitter';
import { WEBHOOK_EVENTS, type InvocationEvent, type InvocationView } from '../../src/index.js';
import type { WebhookTestApp } from './webhook-app.js';

export interface CapturedEvent {
  name: string;
  payload: InvocationEvent;
}

/** Records every `webhook-trigger.invocation.*` event the app emits, in order (needs EventEmitterModule). */
export function captureEvents(t: WebhookTestApp): CapturedEvent[] {
  const emitter = t.app.get(EventEmitter2);
  const seen: CapturedEvent[] = [];
  for (const name of Object.values(WEBHOOK_EVENTS)) emitter.on(name, (payload: InvocationEvent) => seen.push({ name, payload }));
  return seen;
}

/** A run as the admin history shows it. */
export async function historyEntry(t: WebhookTestApp, botId: string, invocationId: string): Promise<InvocationView | undefined> {
  return (await t.admin.listInvocations(botId, { limit: 1000 })).find((i) => i.id === invocationId);
}

/** The events of one run, in the order they were emitted. */
export const eventsOf = (events: CapturedEvent[], invocationId: string): CapturedEvent[] =>
  events.filter((e) => e.payload.invocationId === invocationId);
