// The PostgreSQL measuring stick (issue 13, item 1): the module's accept step written by hand on
// node:http + `pg`, no Nest, on the module's real schema (the shipped WEBHOOK_TRIGGER_MIGRATIONS, run on
// the scratch database the orchestrator created). Per request: route match, the trigger looked up by id
// (SELECT with its one key from webhook_trigger_keys, the presented key's SHA-256 compared in constant time
// with key_hash), JSON body parsed and
// checked to be an object, then in ONE transaction the account debited
// (`UPDATE … SET credits = credits - $n WHERE id = $1 AND credits >= $n`) and the queued run INSERTed,
// and a 200 with the invocation id only after COMMIT. No rate limits, no queue, no run executed.
//
// With `runs` (group mode only), the whole job as the module does it, each stage grouped with one batch in
// flight: after the accept's COMMIT, the run is claimed (`queued → running`, owner, lease, attempt: one
// conditional UPDATE per batch), the `echo` bot's outputs computed, and the outcome stored (`running →
// succeeded`, conditional on the owner: one UPDATE per batch). The measuring stick of runs finished per second.
//
// Two ways to commit (config `commit`):
// - `request`: one transaction per request on a pg Pool (every trigger of the account queues on the
//   account's row lock across a commit);
// - `group`: one transaction in flight; the requests that arrive meanwhile join the next one: one debit
//   per account for the batch, one multi-row INSERT, exact per-request answers. A batch the account
//   cannot fully pay accepts as many requests as the credits cover, in arrival order, and answers 402
//   to the rest.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Pool, type PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import { lib } from '../lib.js';
import { announceReady, childConfig, dieOnUnhandled, serveRpc } from '../shared.js';

export interface RawPgTriggerConfig {
  databaseUrl: string;
  commit: 'request' | 'group';
  /** Size of the pg Pool (trigger look-ups, and the per-request transactions). */
  poolSize: number;
  /** Credits the account starts with. */
  credits: number;
  /** Also claim, run (`echo`) and finish every accepted run, each stage grouped (group mode only). */
  runs?: boolean;
}

dieOnUnhandled('raw-pg');
const config = childConfig<RawPgTriggerConfig>();
if (config.commit !== 'request' && config.commit !== 'group') throw new Error(`bad commit setting: ${String(config.commit)}`);
if (config.runs && config.commit !== 'group') throw new Error('runs: group mode only');

const ACCOUNT = 'bench';
const BOT = 'echo';
/** Credits one run of `echo` costs. */
const COST = 1;
const ROUTE = /^\/webhooks\/([^/?#]+)\/trigger\/?$/;

const pool = new Pool({ connectionString: config.databaseUrl, max: config.poolSize });

interface TriggerRow {
  id: string;
  bot_id: string;
  account_id: string;
  key_hash: string;
}

interface Pending {
  id: string;
  trigger: TriggerRow;
  inputs: string;
  createdAt: number;
  res: ServerResponse;
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

async function lookUp(id: string): Promise<TriggerRow | undefined> {
  const r = await pool.query<TriggerRow>({
    name: 'trigger',
    text:
      'SELECT t.id, t.bot_id, t.account_id, k.key_hash FROM webhook_triggers t JOIN webhook_trigger_keys k ON k.trigger_id = t.id ' +
      'AND k.revoked_at IS NULL WHERE t.id = $1 AND t.deleted_at IS NULL LIMIT 1',
    values: [id],
  });
  return r.rows[0];
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const match = req.method === 'POST' ? ROUTE.exec(req.url ?? '') : null;
  if (!match) return answer(res, 404, { success: false, message: 'not found' });
  const [trigger, text] = await Promise.all([lookUp(match[1]), readBody(req)]);
  if (!trigger) return answer(res, 404, { success: false, message: 'unknown trigger' });
  const presented = req.headers['x-key'];
  if (typeof presented !== 'string' || !timingSafeEqual(sha256(presented), Buffer.from(trigger.key_hash, 'hex')))
    return answer(res, 401, { success: false, message: 'bad key' });
  let inputs: unknown;
  try {
    inputs = JSON.parse(text);
  } catch {
    return answer(res, 400, { success: false, message: 'malformed JSON' });
  }
  if (typeof inputs !== 'object' || inputs === null || Array.isArray(inputs))
    return answer(res, 400, { success: false, message: 'not an object' });
  const p: Pending = {
    id: `inv_${randomBytes(16).toString('base64url')}`,
    trigger,
    inputs: JSON.stringify(inputs),
    createdAt: Date.now(),
    res,
  };
  if (config.commit === 'request') return acceptOne(p);
  queue.push(p);
  if (!inFlight) void flush();
}

const INSERT_ONE =
  'INSERT INTO webhook_invocations (id, trigger_id, bot_id, account_id, status, inputs, credits, idempotency_key, created_at) ' +
  "VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8)";

/** `request` mode: BEGIN, debit, INSERT, COMMIT, answer. */
async function acceptOne(p: Pending): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const debit = await client.query({
      name: 'debit',
      text: 'UPDATE webhook_accounts SET credits = credits - $2 WHERE id = $1 AND credits >= $2',
      values: [p.trigger.account_id, COST],
    });
    if (debit.rowCount !== 1) {
      await client.query('ROLLBACK');
      return answer(p.res, 402, { success: false, message: 'insufficient credits' });
    }
    await client.query({
      name: 'insert',
      text: INSERT_ONE,
      values: [p.id, p.trigger.id, p.trigger.bot_id, p.trigger.account_id, p.inputs, COST, null, p.createdAt],
    });
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e; // dieOnUnhandled: a baseline that cannot commit must fail the bench, not skew it
  } finally {
    client.release();
  }
  answer(p.res, 200, { success: true, invocation: { id: p.id } });
}

/** One stage of `runs`: the items pushed while a batch is written go together into the next one. */
function stage<T>(write: (items: T[]) => Promise<void>): (item: T) => void {
  let waiting: T[] = [];
  let busy = false;
  const go = async () => {
    busy = true;
    try {
      while (waiting.length > 0) {
        const batch = waiting;
        waiting = [];
        await write(batch);
      }
    } finally {
      busy = false;
    }
  };
  // A rejection is unhandled on purpose (dieOnUnhandled): a baseline that cannot write must fail the bench.
  return (item) => {
    waiting.push(item);
    if (!busy) void go();
  };
}

const OWNER = `raw:${process.pid}`;
/** What the module's `echo` bot returns. */
const echo = (inputs: string): string =>
  JSON.stringify(
    Object.entries(JSON.parse(inputs) as Record<string, unknown>).map(([title, v]) => ({
      title,
      message: typeof v === 'string' ? v : JSON.stringify(v),
    })),
  );
const finishRun = stage<{ id: string; outputs: string }>(async (batch) => {
  await pool.query(
    `UPDATE webhook_invocations AS i SET status = 'succeeded', finished_at = $3, outputs = v.outputs ` +
      `FROM unnest($1::text[], $2::text[]) AS v(id, outputs) WHERE i.id = v.id AND i.status = 'running' AND i.owner = $4`,
    [batch.map((b) => b.id), batch.map((b) => b.outputs), Date.now(), OWNER],
  );
});
const claimRun = stage<string>(async (ids) => {
  const at = Date.now();
  const { rows } = await pool.query<{ id: string; inputs: string }>(
    `UPDATE webhook_invocations SET status = 'running', started_at = $2, owner = $3, lease_expires_at = $4, attempts = attempts + 1 ` +
      `WHERE id = ANY($1::text[]) AND status = 'queued' RETURNING id, inputs`,
    [ids, at, OWNER, at + 15_000],
  );
  for (const row of rows) finishRun({ id: row.id, outputs: echo(row.inputs) });
});

/** `group` mode: the requests waiting for the next transaction, and whether one is in flight. */
let queue: Pending[] = [];
let inFlight = false;
let batches = 0;
let batched = 0;
let groupClient: PoolClient | undefined;

async function flush(): Promise<void> {
  inFlight = true;
  groupClient ??= await pool.connect();
  const client = groupClient;
  try {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      batches++;
      batched += batch.length;
      const accepted: Pending[] = [];
      const refused: Pending[] = [];
      await client.query('BEGIN');
      try {
        const byAccount = new Map<string, Pending[]>();
        for (const p of batch) {
          const list = byAccount.get(p.trigger.account_id);
          if (list) list.push(p);
          else byAccount.set(p.trigger.account_id, [p]);
        }
        for (const [account, list] of byAccount) {
          const whole = list.length * COST;
          const debit = await client.query({
            name: 'debit',
            text: 'UPDATE webhook_accounts SET credits = credits - $2 WHERE id = $1 AND credits >= $2',
            values: [account, whole],
          });
          if (debit.rowCount === 1) {
            accepted.push(...list);
            continue;
          }
          // Not enough for the whole batch: as many as the credits cover, in arrival order.
          const row = await client.query<{ credits: string }>('SELECT credits FROM webhook_accounts WHERE id = $1 FOR UPDATE', [account]);
          const affordable = Math.min(list.length, Math.floor(Number(row.rows[0]?.credits ?? 0) / COST));
          if (affordable > 0)
            await client.query('UPDATE webhook_accounts SET credits = credits - $2 WHERE id = $1', [account, affordable * COST]);
          accepted.push(...list.slice(0, affordable));
          refused.push(...list.slice(affordable));
        }
        if (accepted.length > 0) {
          const values: unknown[] = [];
          const rows: string[] = [];
          for (const p of accepted) {
            const b = values.length;
            rows.push(`($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, 'queued', $${b + 5}, $${b + 6}, $${b + 7}, $${b + 8})`);
            values.push(p.id, p.trigger.id, p.trigger.bot_id, p.trigger.account_id, p.inputs, COST, null, p.createdAt);
          }
          await client.query(
            `INSERT INTO webhook_invocations (id, trigger_id, bot_id, account_id, status, inputs, credits, idempotency_key, created_at) VALUES ${rows.join(', ')}`,
            values,
          );
        }
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw e;
      }
      for (const p of accepted) answer(p.res, 200, { success: true, invocation: { id: p.id } });
      if (config.runs) for (const p of accepted) claimRun(p.id);
      for (const p of refused) answer(p.res, 402, { success: false, message: 'insufficient credits' });
    }
  } finally {
    inFlight = false;
  }
}

async function main(): Promise<void> {
  // The module's real schema: its shipped migrations, run on the (empty) scratch database.
  const ds = new DataSource({ type: 'postgres', url: config.databaseUrl, migrations: [...lib.WEBHOOK_TRIGGER_MIGRATIONS] });
  await ds.initialize();
  await ds.runMigrations();
  await ds.destroy();

  const key = `whk_${randomBytes(32).toString('base64url')}`;
  const id = `trg_${randomBytes(12).toString('base64url')}`;
  await pool.query('INSERT INTO webhook_accounts (id, credits) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET credits = EXCLUDED.credits', [
    ACCOUNT,
    config.credits,
  ]);
  await pool.query(
    "INSERT INTO webhook_triggers (id, bot_id, account_id, name, type, created_at) VALUES ($1, $2, $3, 'raw bench', 'webhook', $4)",
    [id, BOT, ACCOUNT, Date.now()],
  );
  await pool.query("INSERT INTO webhook_trigger_keys (id, trigger_id, label, key_hash, created_at) VALUES ($1, $2, 'Key 1', $3, $4)", [
    `key_${randomBytes(12).toString('base64url')}`,
    id,
    createHash('sha256').update(key, 'utf8').digest('hex'),
    Date.now(),
  ]);

  // A rejection is unhandled on purpose: dieOnUnhandled ends the contender, and the bench with it.
  const server = createServer((req, res) => void handle(req, res));
  server.listen(0, '127.0.0.1', () => {
    serveRpc({
      /** Group mode: transactions committed and requests they held, since the start. */
      stats: () => ({ batches, batched }),
    });
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('no address');
    announceReady({ port: address.port, triggers: { echo: { id, key } } });
  });
}

void main().catch((e: unknown) => {
  process.stderr.write(`[raw-pg] failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
