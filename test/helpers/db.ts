import Database from 'better-sqlite3';
import { Client, types } from 'pg';
import type { CapturedEvent } from './events.js';
import { until } from './http.js';
import type { TestTrigger, WebhookTestApp } from './webhook-app.js';
import { WebhookStorage } from '../../src/persistence/webhook-storage.js';
import { SqlWebhookStorage } from '../../src/persistence/sql/sql-webhook-storage.js';
import type { SqlExecutor } from '../../src/persistence/sql/sql-executor.js';

/** Where an app keeps its rows: a SQLite file or a PostgreSQL database. */
export type TestStore = { type: 'better-sqlite3'; file: string } | { type: 'postgres'; url: string };

export interface InvocationRow {
  id: string;
  trigger_id: string;
  status: string;
  credits: number;
  idempotency_key: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

/** Reads the module's SQLite file through a second, read-only connection: what is really stored. */
function withDb<T>(dbFile: string, fn: (db: Database.Database) => T): T {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

export function invocationRows(dbFile: string, triggerId: string): InvocationRow[] {
  return withDb(
    dbFile,
    (db) => db.prepare('SELECT * FROM webhook_invocations WHERE trigger_id = ? ORDER BY created_at, id').all(triggerId) as InvocationRow[],
  );
}

export function creditsRow(dbFile: string, accountId: string): number | null {
  return withDb(dbFile, (db) => {
    const row = db.prepare('SELECT credits FROM webhook_accounts WHERE id = ?').get(accountId) as { credits: number } | undefined;
    return row ? Number(row.credits) : null;
  });
}

/** Changes the module's SQLite file behind its back (e.g. to age a run past retention), through a second connection. */
export function writeDb(dbFile: string, sql: string, ...params: unknown[]): number {
  const db = new Database(dbFile, { fileMustExist: true, timeout: 5_000 });
  try {
    return db.prepare(sql).run(...params).changes;
  } finally {
    db.close();
  }
}

/** PostgreSQL hands `bigint` (oid 20) back as a string; better-sqlite3 as a number. Read both as numbers. */
const PG_BIGINT = 20;
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === PG_BIGINT ? (v: string) => Number(v) : types.getTypeParser(oid, format)) as typeof types.getTypeParser,
};

/** Runs one query on the store through a second connection of its own: what is really stored, on either database. */
async function queryStore<T>(store: TestStore, sql: { sqlite: string; postgres: string }, params: unknown[]): Promise<T[]> {
  if (store.type === 'better-sqlite3') return withDb(store.file, (db) => db.prepare(sql.sqlite).all(...params) as T[]);
  const c = new Client({ connectionString: store.url, types: pgTypes });
  await c.connect();
  try {
    return (await c.query(sql.postgres, params)).rows as T[];
  } finally {
    await c.end();
  }
}

/** `invocationRows` on either database. */
export function storedInvocations(store: TestStore, triggerId: string): Promise<InvocationRow[]> {
  return queryStore<InvocationRow>(
    store,
    {
      sqlite: 'SELECT * FROM webhook_invocations WHERE trigger_id = ? ORDER BY created_at, id',
      // COLLATE "C": the byte order SQLite uses, whatever the server's locale.
      postgres: 'SELECT * FROM webhook_invocations WHERE trigger_id = $1 ORDER BY created_at, id COLLATE "C"',
    },
    [triggerId],
  );
}

/** `creditsRow` on either database: the account's balance, or null when it has no row. */
export async function storedCredits(store: TestStore, accountId: string): Promise<number | null> {
  const [row] = await queryStore<{ credits: number }>(
    store,
    { sqlite: 'SELECT credits FROM webhook_accounts WHERE id = ?', postgres: 'SELECT credits FROM webhook_accounts WHERE id = $1' },
    [accountId],
  );
  return row ? Number(row.credits) : null;
}

/** The stored row of a run, read from the app's SQLite file. */
export function rowOf(app: Pick<WebhookTestApp, 'dbFile'>, t: Pick<TestTrigger, 'id'>, invocationId: string): InvocationRow | undefined {
  return invocationRows(app.dbFile, t.id).find((r) => r.id === invocationId);
}

/** Waits until the run's row in the app's SQLite file has `status`. */
export function untilStored(
  app: Pick<WebhookTestApp, 'dbFile'>,
  t: Pick<TestTrigger, 'id'>,
  invocationId: string,
  status: string,
  timeoutMs = 2_000,
): Promise<void> {
  return until(() => rowOf(app, t, invocationId)?.status === status, timeoutMs, `${invocationId} to be stored ${status}`);
}

/** A refused request leaves no trace: no invocation row for the trigger, the balance as it was, no event. */
export async function expectNothingStored(
  app: Pick<WebhookTestApp, 'store'>,
  events: CapturedEvent[],
  trigger: Pick<TestTrigger, 'id'>,
  accountId: string,
  creditsBefore: number,
): Promise<void> {
  expect(await storedInvocations(app.store, trigger.id)).toHaveLength(0);
  expect(await storedCredits(app.store, accountId)).toBe(creditsBefore);
  expect(events.filter((e) => e.payload.triggerId === trigger.id)).toEqual([]);
}

/** A run's row with what recovery looks at: its owner and lease. */
export interface LeasedRow {
  id: string;
  bot_id: string;
  status: string;
  error: string | null;
  outputs: string | null;
  started_at: number | null;
  finished_at: number | null;
  owner: string | null;
  lease_expires_at: number | null;
  /** Claims so far. */
  attempts: number;
}

/** Every run in a SQLite file (of any trigger, e.g. one a process wrote before it was killed), read-only. */
export function leasedRows(dbFile: string): LeasedRow[] {
  return withDb(
    dbFile,
    (db) =>
      db
        .prepare(
          'SELECT id, bot_id, status, error, outputs, started_at, finished_at, owner, lease_expires_at, attempts FROM webhook_invocations',
        )
        .all() as LeasedRow[],
  );
}

/** The SQL executor under an app's module storage (its unit of work): for suites that count or break its statements. */
export function sqlExecutorOf(app: { get(token: unknown): unknown }): SqlExecutor {
  const storage = app.get(WebhookStorage);
  if (!(storage instanceof SqlWebhookStorage)) throw new Error('This app does not use the module SQL storage');
  return storage.unitOfWork;
}

/** What `storeLargeRuns` writes. */
export interface LargeRuns {
  triggerId: string;
  botId: string;
  accountId: string;
  count: number;
  /** Characters of random hex in each run's inputs (`{"blob":"…"}`). */
  inputsChars: number;
  /** Characters of random hex in each run's error message. */
  errorChars: number;
  /** `createdAt` of the first run (ms); each next run 1 ms later. */
  from: number;
}

/**
 * Stores `count` failed runs with large inputs and errors straight into the store, generated by the database
 * itself in one statement (no megabytes through the driver): what one key holder's traffic leaves behind.
 * Ids are `inv_` + 22 digits of the run's number, so the last one is the newest.
 */
export async function storeLargeRuns(store: TestStore, runs: LargeRuns): Promise<void> {
  const { triggerId, botId, accountId, count, inputsChars, errorChars, from } = runs;
  const columns =
    'id, trigger_id, bot_id, account_id, status, inputs, outputs, error, credits, idempotency_key, request_hash, created_at, started_at, finished_at, attempts';
  // randomblob(n) is n random bytes: hex() makes them 2n characters.
  const sqlite =
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) ` +
    `INSERT INTO webhook_invocations (${columns}) SELECT printf('inv_%022d', i), ?, ?, ?, 'failed', ` +
    `'{"blob":"' || hex(randomblob(? / 2)) || '"}', '[]', '{"message":"' || hex(randomblob(? / 2)) || '"}', 1, NULL, NULL, ` +
    `? + i, ? + i, ? + i, 1 FROM n`;
  if (store.type === 'better-sqlite3') {
    writeDb(store.file, sqlite, count, triggerId, botId, accountId, inputsChars, errorChars, from, from, from);
    return;
  }
  // One random string per statement (md5s of random numbers), its first characters in each row.
  const postgres =
    `WITH blob AS (SELECT string_agg(md5(random()::text), '') AS hex FROM generate_series(1, (GREATEST($5::int, $6::int) / 32) + 1)) ` +
    `INSERT INTO webhook_invocations (${columns}) SELECT 'inv_' || lpad(i::text, 22, '0'), $2, $3, $4, 'failed', ` +
    `'{"blob":"' || i || left(blob.hex, $5::int) || '"}', '[]', '{"message":"' || i || left(blob.hex, $6::int) || '"}', 1, NULL, NULL, ` +
    `$7::bigint + i, $7::bigint + i, $7::bigint + i, 1 FROM generate_series(1, $1::int) AS i, blob`;
  const c = new Client({ connectionString: store.url });
  await c.connect();
  try {
    await c.query(postgres, [count, triggerId, botId, accountId, inputsChars, errorChars, from]);
  } finally {
    await c.end();
  }
}
