import { until } from './http.js';

/** One `invocation` event of the admin's live stream. */
export interface StreamedChange {
  invocationId: string;
  botId: string;
  triggerId: string;
  status: string;
}

/** Opens a text/event-stream (with `headers`, e.g. the admin's credentials) and collects its `invocation` events. */
export async function openStream(url: string, headers: Record<string, string>) {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  if (res.status !== 200 || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    throw new Error(`expected an event stream from ${url}, got ${res.status} ${res.headers.get('content-type')}`);
  }
  const events: StreamedChange[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const type = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (type === 'invocation' && data) events.push(JSON.parse(data) as StreamedChange);
      }
    }
  })();
  return {
    events,
    async until(done: (events: StreamedChange[]) => boolean, timeoutMs = 5_000): Promise<StreamedChange[]> {
      await until(() => done(events), timeoutMs, 'the streamed events');
      return events;
    },
    close(): void {
      controller.abort();
    },
  };
}

/** One event of a run's event stream (`GET …/invocation/{id}/events`). */
export interface RunStreamEvent {
  id: number;
  event: string;
  data: unknown;
}

/**
 * Opens a run's event stream and collects every event (with its id) and comment as they arrive. Resolves
 * once the answer's head is in: `status` and `headers` tell a refusal (401/404/429/503: `body` holds the
 * JSON error) from a stream. `ended` settles when the server closes the stream.
 */
export async function openRunStream(url: string, headers: Record<string, string>) {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  const events: RunStreamEvent[] = [];
  const comments: string[] = [];
  const isStream = res.status === 200 && (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  let body: unknown;
  if (!isStream) {
    const text = await res.text();
    try {
      body = text ? (JSON.parse(text) as unknown) : undefined;
    } catch {
      throw new Error(
        `expected an event stream or a JSON error from ${url}, got ${res.status} ${res.headers.get('content-type')}: ${text.slice(0, 200)}`,
      );
    }
  }
  let closedByServer = false;
  const ended: Promise<void> = isStream
    ? (async () => {
        const reader = res.body!.getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
          if (done) {
            closedByServer = !controller.signal.aborted;
            return;
          }
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (block.startsWith(':')) {
              comments.push(block.slice(1).trim());
              continue;
            }
            const id = /^id: (.*)$/m.exec(block)?.[1];
            const event = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (event !== undefined && data !== undefined) events.push({ id: Number(id), event, data: JSON.parse(data) as unknown });
          }
        }
      })()
    : Promise.resolve();
  return {
    status: res.status,
    headers: res.headers,
    body,
    events,
    comments,
    ended,
    /** True when the server ended the stream (not this client). */
    get closedByServer(): boolean {
      return closedByServer;
    },
    async until(done: (events: RunStreamEvent[]) => boolean, timeoutMs = 5_000): Promise<RunStreamEvent[]> {
      await until(() => done(events), timeoutMs, 'the streamed run events');
      return events;
    },
    /** Drops the connection, as a client that goes away. */
    close(): void {
      controller.abort();
    },
  };
}
