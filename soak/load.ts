// The soak's mixed load: virtual users that trigger, repeat idempotent triggers, wait on sync, read
// status, cancel and read event streams against the API nodes the orchestrator marks up, and record every
// answer (status codes per kind of call; each 200's run id; each sync answer and `done` event for the checks).
import { randomUUID } from 'node:crypto';
import type { NodeSlot } from './fleet.js';
import { sleep } from './fleet.js';
import type { SeededTrigger, SoakBotId } from './shared.js';

/** mulberry32: a small seeded generator, so a seed names one fault schedule and one mix of calls. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type CallKind = 'trigger' | 'repeat' | 'status' | 'sync' | 'cancel' | 'events';

/** An answer worth showing in the report (a 5xx other than 503, a mismatch). */
export interface Incident {
  at: number;
  kind: string;
  node: string;
  detail: string;
}

export class Recorder {
  /** `<kind> <status>` → count; status `no answer` for connection errors and timeouts (not answers). */
  readonly statuses = new Map<string, number>();
  /** Run id → when its trigger was answered 200 and by which trigger. */
  readonly accepted = new Map<string, { triggerId: string; at: number }>();
  readonly syncAnswers: Array<{ id: string; body: unknown }> = [];
  readonly doneEvents: Array<{ id: string; body: unknown }> = [];
  readonly incidents: Incident[] = [];
  /** Idempotent repeats that came back 200 with another run's id. */
  readonly repeatMismatches: Incident[] = [];
  repeatsMatched = 0;
  /** Same key, other body: 422 expected. */
  conflictsRefused = 0;
  readonly conflictsAccepted: Incident[] = [];
  cancels = 0;

  count(kind: CallKind, status: number | 'no answer', node: string, detail = ''): void {
    const key = `${kind} ${status}`;
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + 1);
    if (typeof status === 'number' && status >= 500 && status !== 503) {
      this.incidents.push({ at: Date.now(), kind: `${kind} ${status}`, node, detail: detail.slice(0, 300) });
    }
  }
}

interface Answer {
  status: number;
  body: unknown;
}

export interface LoadOptions {
  nodes: NodeSlot[];
  triggers: SeededTrigger[];
  recorder: Recorder;
  random: () => number;
  /** Trigger calls per second the users aim at, together. */
  rate: number;
  users: number;
}

const REQUEST_TIMEOUT_MS = 30_000;

export class Load {
  private stopped = false;
  private readonly byBot = new Map<SoakBotId, SeededTrigger[]>();

  constructor(private readonly o: LoadOptions) {
    for (const t of o.triggers) this.byBot.set(t.botId, [...(this.byBot.get(t.botId) ?? []), t]);
  }

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.o.random() * items.length)];
  }

  private trigger(bot: SoakBotId, index?: number): SeededTrigger {
    const all = this.byBot.get(bot)!;
    return index === undefined ? this.pick(all) : all[index % all.length];
  }

  /** An API node the "load balancer" sends to (any, when none is marked up). */
  node(except?: NodeSlot): NodeSlot {
    const apis = this.o.nodes.filter((n) => n.role === 'api');
    const up = apis.filter((n) => n.up && n !== except);
    return this.pick(up.length > 0 ? up : apis);
  }

  /** One HTTP call, counted; null when there was no answer (connection refused or reset, timeout). */
  async call(
    kind: CallKind,
    node: NodeSlot,
    method: string,
    path: string,
    t: SeededTrigger,
    init: RequestInit = {},
  ): Promise<Answer | null> {
    try {
      const res = await fetch(`${node.base}${path}`, {
        ...init,
        method,
        headers: { 'x-key': t.key, ...(init.headers as Record<string, string>) },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // kept as text
      }
      this.o.recorder.count(kind, res.status, node.name, text);
      return { status: res.status, body };
    } catch {
      this.o.recorder.count(kind, 'no answer', node.name);
      return null;
    }
  }

  /** POST …/trigger; records a 200's run id. */
  async fire(t: SeededTrigger, inputs: unknown, headers: Record<string, string> = {}, kind: CallKind = 'trigger'): Promise<string | null> {
    const res = await this.call(kind, this.node(), 'POST', `/webhooks/${t.id}/trigger`, t, {
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(inputs),
    });
    if (res?.status !== 200) return null;
    const id = (res.body as { invocation: { id: string } }).invocation.id;
    if (!this.o.recorder.accepted.has(id)) this.o.recorder.accepted.set(id, { triggerId: t.id, at: Date.now() });
    return id;
  }

  /** GET …/sync until it answers something else than 408 or there is no answer (a few tries, on any node). */
  async sync(t: SeededTrigger, id: string): Promise<void> {
    for (let i = 0; i < 4 && !this.stopped; i++) {
      const res = await this.call('sync', this.node(), 'GET', `/webhooks/${t.id}/trigger/invocation/${id}/sync`, t);
      if (res === null || res.status === 503 || res.status === 408) continue;
      if (res.status === 200) this.o.recorder.syncAnswers.push({ id, body: res.body });
      return;
    }
  }

  /** Reads the run's event stream to `done`, resuming from the last event id on another node after a cut. */
  async events(t: SeededTrigger, id: string): Promise<void> {
    let lastId = 0;
    for (let i = 0; i < 4 && !this.stopped; i++) {
      const node = this.node();
      try {
        const res = await fetch(`${node.base}/webhooks/${t.id}/trigger/invocation/${id}/events`, {
          headers: { 'x-key': t.key, ...(lastId > 0 ? { 'last-event-id': String(lastId) } : {}) },
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        if (res.status !== 200) {
          this.o.recorder.count('events', res.status, node.name, await res.text());
          continue;
        }
        const reader = (res.body as ReadableStream<Uint8Array>).getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const eventId = /^id: (.*)$/m.exec(block)?.[1];
            const event = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (eventId !== undefined) lastId = Number(eventId);
            if (event === 'done' && data !== undefined) {
              this.o.recorder.count('events', 200, node.name);
              this.o.recorder.doneEvents.push({ id, body: JSON.parse(data) });
              await reader.cancel().catch(() => undefined);
              return;
            }
          }
        }
        this.o.recorder.count('events', 'no answer', node.name);
      } catch {
        this.o.recorder.count('events', 'no answer', node.name);
      }
    }
  }

  /** One user's turn: a scenario picked by weight. */
  private async turn(): Promise<void> {
    const r = this.o.random();
    const rec = this.o.recorder;
    if (r < 0.22) {
      // Plain triggers, half of them read back once.
      const t = this.trigger(this.pick(['echo', 'echo', 'fail', 'timeout'] as const));
      const id = await this.fire(t, { n: Math.floor(this.o.random() * 1000) });
      if (id && this.o.random() < 0.5) await this.call('status', this.node(), 'GET', `/webhooks/${t.id}/trigger/invocation/${id}`, t);
    } else if (r < 0.37) {
      // Idempotency-Key: a repeat with the same body must name the same run; another body is refused (422).
      const t = this.trigger(this.pick(['echo', 'long', 'retry'] as const));
      const key = randomUUID();
      const inputs = { ms: 200 + Math.floor(this.o.random() * 800), k: key.slice(0, 8) };
      let first: string | null = null;
      for (let i = 0; i < 3 && first === null && !this.stopped; i++) first = await this.fire(t, inputs, { 'idempotency-key': key });
      if (first === null) return;
      const again = await this.call('repeat', this.node(), 'POST', `/webhooks/${t.id}/trigger`, t, {
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(inputs),
      });
      if (again?.status === 200) {
        const id = (again.body as { invocation: { id: string } }).invocation.id;
        if (id === first) rec.repeatsMatched++;
        else rec.repeatMismatches.push({ at: Date.now(), kind: 'repeat', node: '', detail: `key ${key}: ${first} then ${id}` });
      }
      if (this.o.random() < 0.3) {
        const other = await this.call('repeat', this.node(), 'POST', `/webhooks/${t.id}/trigger`, t, {
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ ...inputs, other: true }),
        });
        if (other?.status === 422) rec.conflictsRefused++;
        else if (other?.status === 200)
          rec.conflictsAccepted.push({ at: Date.now(), kind: 'conflict', node: '', detail: `key ${key} answered 200 for another body` });
      }
    } else if (r < 0.6) {
      // Trigger and wait for the outcome.
      const bot = this.pick(['echo', 'echo', 'fail', 'timeout', 'long', 'retry'] as const);
      const t = this.trigger(bot);
      const id = await this.fire(t, { ms: 100 + Math.floor(this.o.random() * 1500) });
      if (id) await this.sync(t, id);
    } else if (r < 0.7) {
      // Cancel a long run, queued or running (only bots without retryInterrupted: see checks.ts, credits).
      const t = this.trigger('long');
      const id = await this.fire(t, { ms: 3_000 });
      if (!id) return;
      await sleep(this.o.random() * 1_500);
      const res = await this.call('cancel', this.node(), 'POST', `/webhooks/${t.id}/trigger/invocation/${id}/cancel`, t);
      if (res?.status === 200) rec.cancels++;
    } else if (r < 0.8) {
      // The event stream, read to `done`.
      const t = this.trigger(this.pick(['echo', 'long', 'retry', 'fail'] as const));
      const id = await this.fire(t, { ms: 200 + Math.floor(this.o.random() * 1_500) });
      if (id) await this.events(t, id);
    } else if (r < 0.9) {
      // retryInterrupted runs, some long enough to be caught by a fault.
      const t = this.trigger('retry');
      const id = await this.fire(t, { ms: 300 + Math.floor(this.o.random() * 3_000) });
      if (id && this.o.random() < 0.4) await this.sync(t, id);
    } else if (r < 0.95) {
      // A burst on one echo trigger, over its per-trigger limit on purpose (429s).
      const t = this.trigger('echo', 2);
      await Promise.all(Array.from({ length: 14 }, (_, i) => this.fire(t, { burst: i })));
    } else {
      const t = this.trigger('long');
      await this.fire(t, { ms: 2_000 + Math.floor(this.o.random() * 3_000) });
    }
  }

  /** Runs the users until `stop()`; each waits between turns so that together they aim at `rate` turns per second. */
  async run(): Promise<void> {
    const meanGapMs = (1000 * this.o.users) / this.o.rate;
    await Promise.all(
      Array.from({ length: this.o.users }, async () => {
        await sleep(this.o.random() * meanGapMs);
        while (!this.stopped) {
          const began = Date.now();
          await this.turn();
          const gap = -Math.log(1 - this.o.random()) * meanGapMs - (Date.now() - began);
          if (gap > 0 && !this.stopped) await sleep(Math.min(gap, 5 * meanGapMs));
        }
      }),
    );
  }

  stop(): void {
    this.stopped = true;
  }
}
