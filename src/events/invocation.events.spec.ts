import { InMemoryClusterBus } from '../cluster/in-memory-cluster.bus.js';
import { WebhookMetrics } from '../telemetry/webhook-metrics.js';
import { InvocationEvents, WEBHOOK_EVENTS } from './invocation.events.js';

const run = { id: 'inv_1', triggerId: 'trg_1', botId: 'echo', accountId: 'acct', credits: 1, createdAt: new Date(0), startedAt: null };

describe('InvocationEvents with a stand-in for EventEmitter2', () => {
  it('emits through `emit` when the stand-in has no emitAsync (a test double of the host)', () => {
    const emit = jest.fn();
    const events = new InvocationEvents(new InMemoryClusterBus(), { emit }, new WebhookMetrics(undefined));
    events.emit(run, 'queued');
    expect(emit).toHaveBeenCalledWith(WEBHOOK_EVENTS.queued, {
      invocationId: 'inv_1',
      triggerId: 'trg_1',
      botId: 'echo',
      accountId: 'acct',
      status: 'queued',
    });
  });
});
