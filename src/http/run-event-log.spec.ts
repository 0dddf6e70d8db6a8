import type { InvocationRecord } from '../persistence/records.js';
import { formatEvent, runEvents } from './run-event-log.js';

const base: InvocationRecord = {
  id: 'inv_AAAAAAAAAAAAAAAAAAAAAA',
  triggerId: 'trg_AAAAAAAAAAAAAAAA',
  botId: 'bot',
  accountId: 'acct',
  status: 'queued',
  inputs: {},
  outputs: null,
  error: null,
  credits: 1,
  idempotencyKey: null,
  requestHash: null,
  createdAt: new Date(0),
  startedAt: null,
  finishedAt: null,
};
const out = (i: number) => ({ title: `t${i}`, message: `m${i}` });
const shape = (row: InvocationRecord) => runEvents(row).map((e) => [e.id, e.event, e.data]);

describe('runEvents (a run history rebuilt from its row)', () => {
  it('numbers queued, running, each output, the end and done in one sequence that only grows', async () => {
    const queued = shape(base);
    const running = shape({ ...base, status: 'running', startedAt: new Date(1) });
    const emitted = shape({ ...base, status: 'running', startedAt: new Date(1), outputs: [out(1), out(2)] });
    const done = shape({
      ...base,
      status: 'succeeded',
      startedAt: new Date(1),
      finishedAt: new Date(2),
      outputs: [out(1), out(2), out(3)],
    });
    expect(queued).toEqual([[1, 'status', { status: 'queued' }]]);
    expect(running).toEqual([...queued, [2, 'status', { status: 'running' }]]);
    expect(emitted).toEqual([...running, [3, 'output', out(1)], [4, 'output', out(2)]]);
    expect(done).toEqual([
      ...emitted,
      [5, 'output', out(3)],
      [6, 'status', { status: 'succeeded' }],
      [7, 'done', { success: true, outputs: [out(1), out(2), out(3)] }],
    ]);
  });

  it('goes queued → cancelled → done for a run cancelled before it started', async () => {
    const error = { message: 'The run was cancelled', code: 'cancelled' };
    expect(shape({ ...base, status: 'cancelled', finishedAt: new Date(2), error })).toEqual([
      [1, 'status', { status: 'queued' }],
      [2, 'status', { status: 'cancelled' }],
      [3, 'done', { success: false, status: 'cancelled', outputs: [], error }],
    ]);
  });

  it('keeps "running" and the outputs of a retried run queued again (the sequence never shrinks)', async () => {
    expect(shape({ ...base, status: 'queued', outputs: [out(1)] })).toEqual([
      [1, 'status', { status: 'queued' }],
      [2, 'status', { status: 'running' }],
      [3, 'output', out(1)],
    ]);
  });

  it('formats an event as text/event-stream: id, event, one line of JSON data, a blank line', async () => {
    expect(formatEvent({ id: 3, event: 'output', data: { title: 'a\nb', message: 'c' } })).toBe(
      'id: 3\nevent: output\ndata: {"title":"a\\nb","message":"c"}\n\n',
    );
  });
});
