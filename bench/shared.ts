// What the orchestrator (run.ts) and the contender processes share: the IPC protocol, the clock and
// the memory probes. Every contender is a child process started with `fork()`, so it has an IPC channel;
// the HTTP port carries only the traffic being measured.

/** Milliseconds since the epoch with sub-millisecond resolution; comparable across processes on one machine. */
export const now = (): number => performance.timeOrigin + performance.now();

/** Sent once by a contender when it listens and is ready to be measured. */
export interface ReadyMessage {
  type: 'ready';
  port: number;
  /** Triggers to call, by bot id (`echo` on every throughput contender). */
  triggers?: Record<string, TriggerRef>;
  /** SQLite settings the contender's writing connection really runs with (read back with PRAGMA). */
  sqlite?: SqliteSettings;
}

export interface TriggerRef {
  id: string;
  key: string;
}

export interface SqliteSettings {
  journalMode: string;
  synchronous: string;
}

/** orchestrator → contender */
export interface RpcCall {
  type: 'call';
  id: number;
  op: string;
  args?: unknown;
}

/** contender → orchestrator */
export interface RpcReply {
  type: 'reply';
  id: number;
  ok: boolean;
  result?: unknown;
  error?: string;
}

/**
 * Operations a contender serves, by name. Each handler declares the arguments the orchestrator sends it
 * (they arrive over IPC, unchecked); `never` lets a handler of any argument type stand in the table.
 */
export type RpcHandlers = Record<string, (args: never) => unknown>;

export interface MemoryReport {
  /** RSS after two full GCs (the process runs with --expose-gc), bytes. */
  rss: number;
  /** Peak RSS of the process's whole life (getrusage maxrss), bytes. */
  peakRss: number;
}

/** RSS after full GCs (with a pause for V8 to hand freed pages back), so garbage is not counted as held memory. */
export async function settledMemory(): Promise<MemoryReport> {
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 2 && gc; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
  return { rss: process.memoryUsage.rss(), peakRss: process.resourceUsage().maxRSS * 1024 };
}

/** Where the OpenTelemetry SDK preload (contenders/otel-sdk.ts) publishes a function that scrapes once more and returns its counts. */
export const OTEL_SDK_REPORT = Symbol.for('nestjs-webhook-triggers.bench.otel-sdk');

/** What the SDK preload saw: spans handed to its exporter, scrapes of the metrics and the last one's size. */
export interface OtelSdkReport {
  spansExported: number;
  scrapes: number;
  scrapeBytes: number;
}

/** Which OpenTelemetry a contender ran with: whether any `@opentelemetry/*` module was loaded, and the SDK's counts. */
export interface TelemetryReport {
  apiLoaded: boolean;
  sdk: OtelSdkReport | null;
}

async function telemetryReport(): Promise<TelemetryReport> {
  const sdk = (globalThis as Record<symbol, (() => Promise<OtelSdkReport>) | undefined>)[OTEL_SDK_REPORT];
  return { apiLoaded: Object.keys(require.cache).some((file) => file.includes('/@opentelemetry/')), sdk: sdk ? await sdk() : null };
}

/**
 * Serves the orchestrator's calls over IPC. Every contender answers `ping` (its clock, to measure the
 * offset between the two processes' clocks), `memory`, `telemetry` and `exit`, besides its own operations.
 */
export function serveRpc(handlers: RpcHandlers): void {
  const all: RpcHandlers = {
    ping: () => now(),
    memory: () => settledMemory(),
    telemetry: () => telemetryReport(),
    exit: () => {
      setImmediate(() => process.exit(0));
      return null;
    },
    ...handlers,
  };
  process.on('message', (message: RpcCall) => {
    if (message?.type !== 'call') return;
    const reply = (r: Omit<RpcReply, 'type' | 'id'>) => process.send?.({ type: 'reply', id: message.id, ...r } satisfies RpcReply);
    const handler = all[message.op];
    if (!handler) return reply({ ok: false, error: `unknown operation ${message.op}` });
    Promise.resolve()
      .then(() => handler(message.args as never))
      .then(
        (result) => reply({ ok: true, result }),
        (error: unknown) => reply({ ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
      );
  });
  // The orchestrator going away must not leave contenders behind.
  process.on('disconnect', () => process.exit(0));
}

export function announceReady(message: Omit<ReadyMessage, 'type'>): void {
  process.send?.({ type: 'ready', ...message } satisfies ReadyMessage);
}

/** Reads the SQLite settings of a connection as the server runs it. */
export function sqliteSettings(db: { pragma(source: string, options: { simple: true }): unknown }): SqliteSettings {
  const levels = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
  const sync = Number(db.pragma('synchronous', { simple: true }));
  return { journalMode: String(db.pragma('journal_mode', { simple: true })).toUpperCase(), synchronous: levels[sync] ?? String(sync) };
}

/** Parses the JSON config a contender receives as its only argument. */
export function childConfig<T>(): T {
  const raw = process.argv[2];
  if (!raw) throw new Error('expected the contender configuration as a JSON argument');
  return JSON.parse(raw) as T;
}

/** Fails the child loudly: an unhandled error in a contender must end the benchmark, not skew it. */
export function dieOnUnhandled(name: string): void {
  const die = (error: unknown) => {
    process.stderr.write(`[${name}] fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  };
  process.on('uncaughtException', die);
  process.on('unhandledRejection', die);
}

/** Request body every throughput contender receives. */
export const TRIGGER_BODY = '{"text":"hello"}';
