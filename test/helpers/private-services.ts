/**
 * Throw-away service instances a fault test starts, kills and restarts on the same port, never touching the
 * shared ones on 5432/6379: a PostgreSQL cluster of its own here, and the soak's `RedisServer` (re-exported).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort, sleep } from '../../soak/fleet.js';

export { RedisServer, freePort } from '../../soak/fleet.js';

/** PostgreSQL refuses to run as root: as root, its binaries run as the `postgres` user. */
function asPostgresUser(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  return { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) };
}

/**
 * A PostgreSQL cluster in a temp dir (initdb, trust auth, no fsync), listening on 127.0.0.1 at a free port.
 * `kill()` is an immediate shutdown (SIGQUIT: every backend gone at once, as in a crash); `start()` again
 * brings it back on the same port with its data.
 */
export class PrivatePostgres {
  private child?: ChildProcess;
  private exited?: Promise<void>;
  private readonly user = asPostgresUser();

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  /** Creates the cluster and starts it. */
  static async create(): Promise<PrivatePostgres> {
    const dir = mkdtempSync(join(tmpdir(), 'webhook-pg-'));
    chmodSync(dir, 0o777);
    const pg = new PrivatePostgres(await freePort(), dir);
    execFileSync('initdb', ['-D', pg.data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8'], { ...pg.user, stdio: 'pipe' });
    await pg.start();
    return pg;
  }

  private get data(): string {
    return join(this.dir, 'data');
  }

  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Starts the server and resolves once it accepts a connection (within 10 s). */
  async start(): Promise<void> {
    const args = ['-D', this.data, '-p', String(this.port), '-h', '127.0.0.1', '-k', this.dir, '-c', 'fsync=off'];
    const child = spawn('postgres', args, { ...this.user, stdio: 'ignore' });
    this.child = child;
    this.exited = new Promise((done) => child.once('exit', () => done()));
    for (let i = 0; i < 400; i++) {
      const client = new Client({ connectionString: this.url });
      try {
        await client.connect();
        await client.end();
        return;
      } catch {
        await client.end().catch(() => undefined);
        if (child.exitCode !== null) throw new Error(`postgres exited at start (code ${child.exitCode})`);
        await sleep(25);
      }
    }
    throw new Error('the private postgres did not accept a connection within 10 s');
  }

  /** An immediate shutdown; resolves once the server has exited. */
  async kill(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    this.child.kill('SIGQUIT');
    await this.exited;
  }

  /** Kills it and removes its files. */
  async remove(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
