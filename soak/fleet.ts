// The soak's own services and processes: a Redis server on a free port (killed and restarted on that
// port), a scratch PostgreSQL database, and the fleet's node processes (node.ts), each started, signalled,
// stopped and restarted by slot.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { Client } from 'pg';
import type { SeedResult } from './shared.js';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A TCP port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/** The promise's value, or null after `ms`. */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

interface Child {
  process: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive: boolean;
}

function launch(command: string, args: string[], env: NodeJS.ProcessEnv, log: WriteStream, onLine?: (line: string) => void): Child {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    log.write(chunk);
    if (!onLine) return;
    buffer += chunk.toString();
    let end: number;
    while ((end = buffer.indexOf('\n')) >= 0) {
      onLine(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => log.write(chunk));
  const result: Child = {
    process: child,
    alive: true,
    exited: new Promise((done) =>
      child.on('exit', (code, signal) => {
        result.alive = false;
        done({ code, signal });
      }),
    ),
  };
  return result;
}

/** PING on a raw socket: true when Redis answers +PONG within a second. */
export function redisPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let buffer = '';
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => finish(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      buffer += d.toString();
      if (buffer.includes('\r\n')) finish(buffer.startsWith('+PONG'));
    });
    socket.on('error', () => finish(false));
  });
}

/** A redis-server of the soak's own, without persistence: a restart loses every key (the queue, the limits' windows). */
export class RedisServer {
  private child: Child | null = null;
  private readonly log: WriteStream;

  constructor(
    readonly port: number,
    dir: string,
  ) {
    this.log = createWriteStream(join(dir, 'redis.log'), { flags: 'a' });
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts it and resolves once it answers PING; returns when that was (ms since the epoch). */
  async start(): Promise<number> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'];
    this.child = launch('redis-server', args, process.env, this.log);
    for (let i = 0; i < 200; i++) {
      if (await redisPing(this.port)) return Date.now();
      if (!this.child.alive) throw new Error(`redis-server exited at start (see redis.log)`);
      await sleep(25);
    }
    throw new Error('redis-server did not answer PING within 5 s');
  }

  async kill(): Promise<void> {
    if (!this.child?.alive) return;
    this.child.process.kill('SIGKILL');
    await this.child.exited;
  }
}

/** A fresh PostgreSQL database on `baseUrl`'s server, dropped (FORCE) by `drop()`. */
export async function createScratchDatabase(baseUrl: string, name: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = new Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    drop: async () => {
      if (dropped) return;
      dropped = true;
      const c = new Client({ connectionString: baseUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

export type NodeRole = 'api' | 'worker';

/** How long a node may take between SIGTERM and its exit before the soak SIGKILLs it (and records that). */
export const STOP_BOUND_MS = 15_000;
const READY_BOUND_MS = 30_000;

/** One place in the fleet (`api-0`, `worker-1`, …): the process currently in it, restarted in place with the same port. */
export class NodeSlot {
  private child: Child | null = null;
  private readonly log: WriteStream;
  /** False while the orchestrator's "load balancer" must not send to it. */
  up = false;
  starts = 0;

  constructor(
    readonly name: string,
    readonly role: NodeRole,
    readonly port: number,
    private readonly script: string,
    private readonly env: Record<string, string>,
    dir: string,
  ) {
    this.log = createWriteStream(join(dir, `${name}.log`), { flags: 'a' });
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.alive ? this.child.process.pid : undefined;
  }

  /** Starts the process and waits for its ready line; `seed` makes it create the soak's accounts and triggers. */
  async start(seed = false): Promise<SeedResult | undefined> {
    let ready: (value: SeedResult | undefined) => void = () => undefined;
    const readyLine = new Promise<SeedResult | undefined>((r) => (ready = r));
    this.starts++;
    this.log.write(`\n--- start #${this.starts} at ${new Date().toISOString()}\n`);
    const env = { ...process.env, ...this.env, SOAK_ROLE: this.role, SOAK_PORT: String(this.port), SOAK_SEED: seed ? '1' : '0' };
    const child = launch(process.execPath, [this.script], env, this.log, (line) => {
      if (line.startsWith('SOAK_READY ')) ready((JSON.parse(line.slice('SOAK_READY '.length)) as { seeded?: SeedResult }).seeded);
    });
    this.child = child;
    const result = await within(Promise.race([readyLine, child.exited.then(() => 'exited' as const)]), READY_BOUND_MS);
    if (result === 'exited') throw new Error(`${this.name} exited while starting (see ${this.name}.log)`);
    if (result === null && !child.alive) throw new Error(`${this.name} exited while starting (see ${this.name}.log)`);
    if (result === null) throw new Error(`${this.name} was not ready within ${READY_BOUND_MS / 1000} s (see ${this.name}.log)`);
    this.up = true;
    return result;
  }

  signal(signal: NodeJS.Signals): void {
    if (this.child?.alive) this.child.process.kill(signal);
  }

  /** SIGKILL, and wait for the exit. */
  async kill(): Promise<void> {
    this.up = false;
    if (!this.child?.alive) return;
    this.child.process.kill('SIGKILL');
    await this.child.exited;
  }

  /**
   * SIGTERM, and wait up to STOP_BOUND_MS for the exit; a process still running then is SIGKILLed. Returns
   * how the stop went: `clean` (exit code 0), `exit <code>`, or `hung` (it needed the SIGKILL).
   */
  async terminate(): Promise<{ outcome: string; ms: number }> {
    this.up = false;
    const child = this.child;
    if (!child?.alive) return { outcome: 'not running', ms: 0 };
    const began = Date.now();
    child.process.kill('SIGTERM');
    const exit = await within(child.exited, STOP_BOUND_MS);
    if (exit === null) {
      this.log.write(`\n--- did not exit within ${STOP_BOUND_MS} ms of SIGTERM: SIGKILL\n`);
      child.process.kill('SIGKILL');
      await child.exited;
      return { outcome: 'hung', ms: Date.now() - began };
    }
    // Nest's shutdown hooks end the process by raising the signal again once closed: that is a clean stop too.
    const clean = exit.code === 0 || exit.signal === 'SIGTERM';
    return { outcome: clean ? 'clean' : `exit ${exit.code ?? exit.signal}`, ms: Date.now() - began };
  }

  close(): void {
    this.log.end();
  }
}
