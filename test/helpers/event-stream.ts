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
