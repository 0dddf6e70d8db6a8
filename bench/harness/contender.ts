// Starting, calling and stopping one contender process.
import { fork, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { now, type ReadyMessage, type RpcCall, type RpcReply } from '../shared.js';

const START_TIMEOUT_MS = 60_000;
const CALL_TIMEOUT_MS = 120_000;

export class Contender {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; op: string }>();
  /** Set when the process ended without being asked to. */
  private died: Error | null = null;
  private stopping = false;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    readonly ready: ReadyMessage,
  ) {}

  get pid(): number {
    return this.child.pid!;
  }

  get port(): number {
    return this.ready.port;
  }

  /** Forks `script` (compiled JS) with `config` as its JSON argument and waits for its ready message. */
  static start(name: string, script: string, config: unknown = {}, nodeFlags: string[] = []): Promise<Contender> {
    const child = fork(script, [JSON.stringify(config)], {
      execArgv: ['--expose-gc', ...nodeFlags],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    // The contender's own output goes to our stderr, prefixed, so stdout stays the report.
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => process.stderr.write(`  [${name}] ${line}\n`));
    }
    return new Promise<Contender>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`${name} did not become ready within ${START_TIMEOUT_MS / 1000} s`));
      }, START_TIMEOUT_MS);
      const onExit = (code: number | null, signal: string | null) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited before it was ready (code ${code}, signal ${signal}); see its output above`));
      };
      child.once('exit', onExit);
      child.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      const onMessage = (message: ReadyMessage) => {
        if (message?.type !== 'ready') return;
        clearTimeout(timer);
        child.off('exit', onExit);
        child.off('message', onMessage);
        resolve(new Contender(name, child, message));
      };
      child.on('message', onMessage);
    }).then((contender) => contender.wire());
  }

  private wire(): this {
    this.child.on('message', (message: RpcReply) => {
      if (message?.type !== 'reply') return;
      const waiting = this.pending.get(message.id);
      if (!waiting) return;
      this.pending.delete(message.id);
      if (message.ok) waiting.resolve(message.result);
      else waiting.reject(new Error(`${this.name}: ${waiting.op} failed: ${message.error}`));
    });
    this.child.once('exit', (code, signal) => {
      if (this.stopping) return;
      this.died = new Error(`${this.name} exited during the benchmark (code ${code}, signal ${signal}); see its output above`);
      for (const { reject } of this.pending.values()) reject(this.died);
      this.pending.clear();
    });
    return this;
  }

  /** Throws if the process has died since the last check. */
  assertAlive(): void {
    if (this.died) throw this.died;
  }

  call<T>(op: string, args?: unknown, timeoutMs = CALL_TIMEOUT_MS): Promise<T> {
    this.assertAlive();
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.name}: ${op} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        op,
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.child.send({ type: 'call', id, op, args } satisfies RpcCall);
    });
  }

  /**
   * How far the contender's clock (`now()`) is ahead of ours, in ms, from the ping with the shortest
   * round trip; subtract it from the contender's timestamps to put them on our clock.
   */
  async clockOffset(samples = 25): Promise<number> {
    let best = { rtt: Infinity, offset: 0 };
    for (let i = 0; i < samples; i++) {
      const t0 = now();
      const theirs = await this.call<number>('ping');
      const t1 = now();
      if (t1 - t0 < best.rtt) best = { rtt: t1 - t0, offset: theirs - (t0 + t1) / 2 };
    }
    return best.offset;
  }

  /** Asks the process to exit, then kills it if it has not within 5 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.stopping = true;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.call('exit', undefined, 5_000).catch(() => undefined);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}
