// The measuring stick: the least a trigger endpoint must do, written by hand on node:http.
// Route match, X-Key looked up in a Map, JSON body parsed and checked to be an object, one prepared
// better-sqlite3 INSERT of the queued run (WAL), a JSON answer. No framework, no guards, no rate limit,
// no credits, no background run.
//
// Two ways to commit (config `commit`):
// - `request`: autocommit, one COMMIT (and, with synchronous=FULL, one fsync) per request;
// - `tick`: group commit like the module's SQLite unit of work: the first insert of an event-loop tick
//   opens a transaction (BEGIN IMMEDIATE), the inserts of that tick join it, a setImmediate COMMITs it,
//   and only then is each of those requests answered. Same durability per answered request, one fsync
//   per tick instead of one per request.
//
// With `runs` (tick mode only), the whole job as the module does it: after its accept's COMMIT each run is
// claimed (`queued → running`, with an owner) and, once that committed, its `echo` outputs stored
// (`running → succeeded`, conditional on the owner); the writes of each stage join the tick's transaction,
// so every stage is grouped like the accepts. RPC `pending` and `drain` tell how many runs are not finished.
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { announceReady, childConfig, dieOnUnhandled, serveRpc, sqliteSettings } from '../shared.js';

interface RawTriggerConfig {
  /** PRAGMA synchronous for the WAL database: SQLite's default is FULL, which is what the module runs. */
  synchronous: string;
  /** `request`: autocommit per insert; `tick`: the inserts of one event-loop tick share one COMMIT. */
  commit: 'request' | 'tick';
  /** Also claim, run (`echo`) and finish every accepted run, each stage grouped per tick (tick mode only). */
  runs?: boolean;
}

dieOnUnhandled('raw');
const config = childConfig<RawTriggerConfig>();
if (!['OFF', 'NORMAL', 'FULL', 'EXTRA'].includes(config.synchronous)) throw new Error(`bad synchronous setting: ${config.synchronous}`);
if (config.commit !== 'request' && config.commit !== 'tick') throw new Error(`bad commit setting: ${String(config.commit)}`);
if (config.runs && config.commit !== 'tick') throw new Error('runs: tick mode only');

const db = new Database(join(mkdtempSync(join(tmpdir(), 'bench-raw-')), 'raw.sqlite'));
db.pragma('journal_mode = WAL');
db.pragma(`synchronous = ${config.synchronous}`);
db.exec(`CREATE TABLE invocations (
  id TEXT PRIMARY KEY, trigger_id TEXT NOT NULL, inputs TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL,
  started_at INTEGER, finished_at INTEGER, owner TEXT, outputs TEXT)`);
db.exec('CREATE INDEX invocations_status ON invocations (status)');
const insert = db.prepare('INSERT INTO invocations (id, trigger_id, inputs, status, created_at) VALUES (?, ?, ?, ?, ?)');
const begin = db.prepare('BEGIN IMMEDIATE');
const commit = db.prepare('COMMIT');

const trigger = { id: `trg_${randomBytes(12).toString('base64url')}`, key: `whk_${randomBytes(32).toString('base64url')}` };
const keys = new Map<string, string>([[trigger.id, trigger.key]]);
const ROUTE = /^\/webhooks\/([^/?#]+)\/trigger\/?$/;

function answer(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const match = req.method === 'POST' ? ROUTE.exec(req.url ?? '') : null;
  if (!match) return answer(res, 404, { success: false, message: 'not found' });
  const triggerId = match[1];
  if (!keys.has(triggerId)) return answer(res, 404, { success: false, message: 'unknown trigger' });
  if (keys.get(triggerId) !== req.headers['x-key']) return answer(res, 401, { success: false, message: 'bad key' });
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let inputs: unknown;
    try {
      inputs = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return answer(res, 400, { success: false, message: 'malformed JSON' });
    }
    if (typeof inputs !== 'object' || inputs === null || Array.isArray(inputs))
      return answer(res, 400, { success: false, message: 'not an object' });
    const id = `inv_${randomBytes(16).toString('base64url')}`;
    if (config.commit === 'request') {
      insert.run(id, triggerId, JSON.stringify(inputs), 'queued', Date.now());
      return answer(res, 200, { success: true, invocation: { id } });
    }
    const batch = openBatch();
    insert.run(id, triggerId, JSON.stringify(inputs), 'queued', Date.now());
    batch.push(() => {
      answer(res, 200, { success: true, invocation: { id } });
      if (config.runs) claims.push(id);
    });
  });
}

const OWNER = `raw:${process.pid}`;
const claim = db.prepare(
  "UPDATE invocations SET status = 'running', started_at = ?, owner = ? WHERE id = ? AND status = 'queued' RETURNING inputs",
);
const finish = db.prepare(
  "UPDATE invocations SET status = 'succeeded', finished_at = ?, outputs = ? WHERE id = ? AND status = 'running' AND owner = ?",
);
const pendingCount = db.prepare("SELECT count(*) AS n FROM invocations WHERE status IN ('queued', 'running')");
/** What the module's `echo` bot returns. */
const echo = (inputs: string): string =>
  JSON.stringify(
    Object.entries(JSON.parse(inputs) as Record<string, unknown>).map(([title, v]) => ({
      title,
      message: typeof v === 'string' ? v : JSON.stringify(v),
    })),
  );

/** One stage of `runs`: the ids pushed in a tick are written in the next one, inside that tick's transaction. */
function stage(write: (id: string, batch: Array<() => void>) => void): { push(id: string): void } {
  let ids: string[] = [];
  return {
    push(id: string) {
      if (ids.length === 0)
        setImmediate(() => {
          const now = ids;
          ids = [];
          const batch = openBatch();
          for (const each of now) write(each, batch);
        });
      ids.push(id);
    },
  };
}
const finishes = stage((id, batch) => {
  const outputs = pendingOutputs.get(id)!;
  pendingOutputs.delete(id);
  finish.run(Date.now(), outputs, id, OWNER);
  batch.push(() => undefined);
});
/** A claimed run's outputs, stored once its claim committed. */
const pendingOutputs = new Map<string, string>();
const claims = stage((id, batch) => {
  const row = claim.get(Date.now(), OWNER, id) as { inputs: string } | undefined;
  if (!row) return;
  pendingOutputs.set(id, echo(row.inputs));
  batch.push(() => finishes.push(id));
});

/** `tick` mode: the answers waiting for the open transaction's COMMIT, or null when none is open. */
let batch: Array<() => void> | null = null;

function openBatch(): Array<() => void> {
  if (batch) return batch;
  begin.run();
  const current: Array<() => void> = [];
  batch = current;
  // After the I/O callbacks of this tick (the other requests that arrived with this one).
  setImmediate(() => {
    batch = null;
    try {
      commit.run();
    } catch (error) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw error; // dieOnUnhandled: a baseline that cannot commit must fail the bench, not skew it
    }
    for (const send of current) send();
  });
  return current;
}

const server = createServer(handle);
server.listen(0, '127.0.0.1', () => {
  serveRpc({
    /** Runs accepted and not finished (`runs`). */
    pending: () => (pendingCount.get() as { n: number }).n,
    /** Waits until every accepted run finished (`runs`). */
    drain: async () => {
      const start = performance.now();
      const pendingAtStart = (pendingCount.get() as { n: number }).n;
      while ((pendingCount.get() as { n: number }).n > 0) await new Promise((r) => setTimeout(r, 10));
      return { ms: performance.now() - start, pendingAtStart };
    },
  });
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  announceReady({ port: address.port, triggers: { echo: trigger }, sqlite: sqliteSettings(db) });
});
