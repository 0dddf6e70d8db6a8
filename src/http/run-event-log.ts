import { TERMINAL_STATUSES, type InvocationRecord } from '../persistence/records.js';
import { syncBody } from './invocation-responses.js';

/** One event of a run's event stream. */
export interface RunEvent {
  id: number;
  event: 'status' | 'output' | 'done';
  data: unknown;
}

/**
 * A run's whole event history, rebuilt from its row alone, so every node numbers it the same and a
 * client resumes exactly (`Last-Event-ID`): 1 `status` queued; 2 `status` running (once it started);
 * then one `output` per output in the row's order (emitted ones as they were stored, then the returned
 * ones); then the terminal `status`; then `done` with the sync body. A run cancelled while queued goes
 * 1 queued, 2 cancelled, 3 done. The row only ever grows along this sequence (outputs are appended,
 * states move forward), so an id names the same event whenever it is read.
 */
export function runEvents(row: InvocationRecord): RunEvent[] {
  const events: RunEvent[] = [{ id: 1, event: 'status', data: { status: 'queued' } }];
  const outputs = row.outputs ?? [];
  // A retried run (queued again after a crash) that had emitted keeps its "running" and its outputs.
  if (row.startedAt !== null || outputs.length > 0 || row.status === 'running')
    events.push({ id: events.length + 1, event: 'status', data: { status: 'running' } });
  for (const output of outputs) events.push({ id: events.length + 1, event: 'output', data: output });
  if (TERMINAL_STATUSES.has(row.status)) {
    events.push({ id: events.length + 1, event: 'status', data: { status: row.status } });
    events.push({ id: events.length + 1, event: 'done', data: syncBody(row) });
  }
  return events;
}

/** One event in the text/event-stream format. */
export function formatEvent({ id, event, data }: RunEvent): string {
  return `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
