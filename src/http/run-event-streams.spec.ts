import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { InMemoryClusterBus } from '../cluster/in-memory-cluster.bus.js';
import { InvocationChanges } from '../invocations/invocation-changes.js';
import type { InvocationService } from '../invocations/invocation.service.js';
import { ShutdownState } from '../lifecycle/shutdown.state.js';
import { resolveWebhookTriggerOptions } from '../options/resolve-options.js';
import type { InvocationRecord, TriggerRecord } from '../persistence/records.js';
import { RUN_STREAM_KEEPALIVE_MS, RunEventStreams } from './run-event-streams.js';
import { SYSTEM_CLOCK } from '../time/clock.js';

/** What the stream writes, on a ServerResponse stand-in. */
class FakeResponse extends EventEmitter {
  status?: number;
  headersSent = false;
  writableEnded = false;
  written = '';
  writeHead(status: number): this {
    this.status = status;
    this.headersSent = true;
    return this;
  }
  write(chunk: string): boolean {
    this.written += chunk;
    return true;
  }
  end(): this {
    this.writableEnded = true;
    return this;
  }
}

const trigger = { id: 'trg_AAAAAAAAAAAAAAAA' } as TriggerRecord;
const row = (fields: Partial<InvocationRecord>): InvocationRecord =>
  ({
    id: 'inv_AAAAAAAAAAAAAAAAAAAAAA',
    triggerId: trigger.id,
    status: 'running',
    outputs: null,
    startedAt: new Date(1),
    ...fields,
  }) as InvocationRecord;

describe('RunEventStreams', () => {
  let current: InvocationRecord;
  let reads: number;
  let bus: InMemoryClusterBus;
  let shutdown: ShutdownState;
  let streams: RunEventStreams;

  beforeEach(() => {
    current = row({});
    reads = 0;
    bus = new InMemoryClusterBus();
    shutdown = new ShutdownState(SYSTEM_CLOCK);
    const service = { find: async () => (reads++, current) } as unknown as InvocationService;
    streams = new RunEventStreams(service, new InvocationChanges(bus), resolveWebhookTriggerOptions({ maxEventStreams: 1 }, {}), shutdown);
  });
  afterEach(() => jest.useRealTimers());

  it('sends a keepalive comment every 15 s and reads the row only when the bus says the run changed', async () => {
    jest.useFakeTimers();
    const res = new FakeResponse();
    await streams.serve(trigger, current.id, 0, res as unknown as ServerResponse, () => undefined);
    await jest.advanceTimersByTimeAsync(2_000); // the one settle read
    const afterOpen = reads;
    await jest.advanceTimersByTimeAsync(RUN_STREAM_KEEPALIVE_MS * 2);
    expect(res.written.match(/^: keepalive$/gm)).toHaveLength(2);
    expect(reads).toBe(afterOpen); // 30 s of a quiet run: no read at all
    current = row({ outputs: [{ title: 't', message: 'm' }] });
    bus.announce({ invocationId: current.id, botId: 'b', triggerId: trigger.id, status: 'running', kind: 'output' });
    await jest.advanceTimersByTimeAsync(0);
    expect(reads).toBe(afterOpen + 1);
    expect(res.written).toContain('id: 3\nevent: output\ndata: {"title":"t","message":"m"}\n\n');
    current = row({ status: 'succeeded', outputs: [{ title: 't', message: 'm' }], finishedAt: new Date(2) });
    await bus.publish(current.id);
    await jest.advanceTimersByTimeAsync(0);
    expect(res.written).toMatch(/id: 5\nevent: done\n/);
    expect(res.writableEnded).toBe(true);
    expect(streams.count).toBe(0);
  });

  it('holds one slot per open stream (503 beyond), gives it back when the client leaves, and ends streams at shutdown', async () => {
    const first = new FakeResponse();
    await streams.serve(trigger, current.id, 0, first as unknown as ServerResponse, () => undefined);
    await expect(
      streams.serve(trigger, current.id, 0, new FakeResponse() as unknown as ServerResponse, () => undefined),
    ).rejects.toMatchObject({
      retryAfterSeconds: 1,
    });
    first.emit('close');
    expect(streams.count).toBe(0);
    const second = new FakeResponse();
    await streams.serve(trigger, current.id, 0, second as unknown as ServerResponse, () => undefined);
    shutdown.begin();
    expect(second.writableEnded).toBe(true);
    expect(streams.count).toBe(0);
    await expect(streams.serve(trigger, current.id, 0, new FakeResponse() as unknown as ServerResponse, () => undefined)).rejects.toThrow(
      /shutting down/,
    );
  });
});
