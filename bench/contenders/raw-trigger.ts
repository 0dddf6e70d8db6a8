// The measuring stick: the least a trigger endpoint must do, written by hand on node:http.
// Route match, X-Key looked up in a Map, JSON body parsed and checked to be an object, one prepared
// better-sqlite3 INSERT of the queued run (WAL, autocommit), a JSON answer. No framework, no guards,
// no rate limit, no credits, no background run.
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
}

dieOnUnhandled('raw');
const config = childConfig<RawTriggerConfig>();
if (!['OFF', 'NORMAL', 'FULL', 'EXTRA'].includes(config.synchronous)) throw new Error(`bad synchronous setting: ${config.synchronous}`);

const db = new Database(join(mkdtempSync(join(tmpdir(), 'bench-raw-')), 'raw.sqlite'));
db.pragma('journal_mode = WAL');
db.pragma(`synchronous = ${config.synchronous}`);
db.exec(`CREATE TABLE invocations (
  id TEXT PRIMARY KEY, trigger_id TEXT NOT NULL, inputs TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL)`);
const insert = db.prepare('INSERT INTO invocations (id, trigger_id, inputs, status, created_at) VALUES (?, ?, ?, ?, ?)');

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
    if (typeof inputs !== 'object' || inputs === null || Array.isArray(inputs)) return answer(res, 400, { success: false, message: 'not an object' });
    const id = `inv_${randomBytes(16).toString('base64url')}`;
    insert.run(id, triggerId, JSON.stringify(inputs), 'queued', Date.now());
    answer(res, 200, { success: true, invocation: { id } });
  });
}

const server = createServer(handle);
server.listen(0, '127.0.0.1', () => {
  serveRpc({});
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  announceReady({ port: address.port, triggers: { echo: trigger }, sqlite: sqliteSettings(db) });
});
