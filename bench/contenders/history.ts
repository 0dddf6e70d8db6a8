// History pages on a large table: the compiled module's InvocationRepository on SQLite (a temp file) or
// PostgreSQL (a scratch database, created and dropped here), filled with `rows` runs over 5 bots and 20
// triggers, all six statuses, ~200-byte outputs. Times each query shape of the admin's history screen
// around the repository call (server side, no HTTP), and as the baseline the same 50 rows read by
// primary key with the bare driver on its own connection. Serves one operation, `run`.
import 'reflect-metadata';
import { Module, type DynamicModule, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Database from 'better-sqlite3';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type { HistoryQuery, InvocationRepository } from '../../src/index.js';
import { lib } from '../lib.js';
import { announceReady, childConfig, dieOnUnhandled, now, serveRpc } from '../shared.js';

export interface HistoryConfig {
  database: 'sqlite' | 'postgres';
  /** The server for the scratch database (its own database is only used to create and drop it). */
  postgresUrl: string;
  rows: number;
  reps: number;
}

export interface HistoryFigure {
  shape: string;
  p50: number;
  p95: number;
  /** Rows the call returned (or the count it gave). */
  rows: number;
  /** The plan of the shape's statement, as the database explains it. */
  plan: string[];
}

export interface HistoryResult {
  rows: number;
  fillMs: number;
  server: string;
  baseline: { p50: number; p95: number };
  figures: HistoryFigure[];
}

const BOTS = 5;
const TRIGGERS = 20;
const PAGE = 50;
const DAY = 86_400_000;
/** The newest run; the table spans the 30 days before it. */
const END = Date.UTC(2026, 10, 1);
const SPAN = 30 * DAY;

// One definition of the rows, used by both fills (JS for SQLite, generate_series for PostgreSQL), so
// both databases hold the same table. Run g (1..rows): trigger g % 20 of bot (g % 20) % 5; created in
// order of g, three runs per timestamp; status by (g / 20) % 100 (so it does not follow the trigger):
// 80 succeeded, 10 failed, 4 cancelled, 4 timed_out, 1 queued, 1 running; every third run has an
// idempotency key.
const triggerId = (t: number) => `trg_bench${String(t).padStart(11, '0')}`;
const botOf = (t: number) => `bot-${t % BOTS}`;
const COLUMNS =
  'id, trigger_id, bot_id, account_id, status, inputs, outputs, error, credits, idempotency_key, request_hash, created_at, started_at, finished_at, owner, lease_expires_at';

function statusOf(g: number): string {
  const s = Math.floor(g / TRIGGERS) % 100;
  return s < 80 ? 'succeeded' : s < 90 ? 'failed' : s < 94 ? 'cancelled' : s < 98 ? 'timed_out' : s < 99 ? 'queued' : 'running';
}

function rowOf(g: number, rows: number): unknown[] {
  const t = g % TRIGGERS;
  const md5 = createHash('md5').update(String(g)).digest('hex');
  const status = statusOf(g);
  const created = END - SPAN + Math.floor(Math.floor(g / 3) * ((SPAN / rows) * 3));
  const finished = status !== 'queued' && status !== 'running';
  return [
    `inv_${md5.slice(0, 22)}`,
    triggerId(t),
    botOf(t),
    `acct-${botOf(t)}`,
    status,
    `{"n":${g}}`,
    finished ? `[{"title":"result","message":"${md5.repeat(5)}"}]` : null,
    status === 'failed' ? '{"message":"boom"}' : null,
    1,
    g % 3 === 0 ? `order-${g}` : null,
    null,
    created,
    status === 'queued' ? null : created + 100,
    finished ? created + 1100 : null,
    status === 'running' ? 'bench' : null,
    status === 'running' ? END + 365 * DAY : null,
  ];
}

const POSTGRES_FILL = (rows: number) => `
  INSERT INTO webhook_invocations (${COLUMNS})
  SELECT 'inv_' || substr(md5(g::text), 1, 22), 'trg_bench' || lpad((g % ${TRIGGERS})::text, 11, '0'), 'bot-' || (g % ${TRIGGERS} % ${BOTS}),
    'acct-bot-' || (g % ${TRIGGERS} % ${BOTS}), st, '{"n":' || g || '}',
    CASE WHEN st IN ('queued', 'running') THEN NULL ELSE '[{"title":"result","message":"' || repeat(md5(g::text), 5) || '"}]' END,
    CASE WHEN st = 'failed' THEN '{"message":"boom"}' END, 1, CASE WHEN g % 3 = 0 THEN 'order-' || g END, NULL,
    created, CASE WHEN st = 'queued' THEN NULL ELSE created + 100 END,
    CASE WHEN st IN ('queued', 'running') THEN NULL ELSE created + 1100 END,
    CASE WHEN st = 'running' THEN 'bench' END, CASE WHEN st = 'running' THEN ${END + 365 * DAY}::bigint END
  FROM (
    SELECT g, ${END - SPAN}::bigint + floor(floor(g / 3) * (${SPAN / rows}::float8 * 3))::bigint AS created,
      CASE WHEN (g / ${TRIGGERS}) % 100 < 80 THEN 'succeeded' WHEN (g / ${TRIGGERS}) % 100 < 90 THEN 'failed'
        WHEN (g / ${TRIGGERS}) % 100 < 94 THEN 'cancelled' WHEN (g / ${TRIGGERS}) % 100 < 98 THEN 'timed_out'
        WHEN (g / ${TRIGGERS}) % 100 < 99 THEN 'queued' ELSE 'running' END AS st
    FROM generate_series(1, ${rows}) AS g
  ) AS runs`;

/** Reads with the bare driver on a connection of its own: the baseline and the set-up look-ups. */
interface Raw {
  all(sql: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

async function fillSqlite(file: string, rows: number): Promise<void> {
  const db = new Database(file);
  db.pragma('synchronous = OFF');
  const batch = 100;
  const insertMany = db.prepare(
    `INSERT INTO webhook_invocations (${COLUMNS}) VALUES ${Array(batch)
      .fill(`(${Array(16).fill('?').join(', ')})`)
      .join(', ')}`,
  );
  const insertOne = db.prepare(`INSERT INTO webhook_invocations (${COLUMNS}) VALUES (${Array(16).fill('?').join(', ')})`);
  db.exec('BEGIN');
  let g = 1;
  for (; g + batch - 1 <= rows; g += batch) {
    const values: unknown[] = [];
    for (let k = 0; k < batch; k++) values.push(...rowOf(g + k, rows));
    insertMany.run(...values);
  }
  for (; g <= rows; g++) insertOne.run(...rowOf(g, rows));
  db.exec('COMMIT');
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

async function timed(reps: number, call: () => Promise<unknown>): Promise<{ p50: number; p95: number }> {
  for (let i = 0; i < 5; i++) await call();
  const ms: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = now();
    await call();
    ms.push(now() - t0);
  }
  ms.sort((a, b) => a - b);
  return { p50: quantile(ms, 0.5), p95: quantile(ms, 0.95) };
}

@Module({})
class HistoryBenchModule {
  static configure(database: { type: 'better-sqlite3'; database: string } | { type: 'postgres'; url: string }): DynamicModule {
    // No bots and retention off (runs and audit entries): startup dispatches, writes and deletes nothing. A write
    // at startup would deadlock with the SQLite fill below, which holds this process's event loop while it waits
    // for the file's lock that the module's pending commit (due on the next turn) holds.
    return {
      module: HistoryBenchModule,
      imports: [lib.WebhookTriggerModule.forRoot({ database, historyRetentionDays: 0, auditRetentionDays: 0 })],
    };
  }
}

async function run(config: HistoryConfig): Promise<HistoryResult> {
  const cleanups: Array<() => Promise<void> | void> = [];
  let app: INestApplicationContext | undefined;
  let raw: Raw | undefined;
  try {
    let database: { type: 'better-sqlite3'; database: string } | { type: 'postgres'; url: string };
    let server: string;
    let fill: () => Promise<void>;
    if (config.database === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), 'bench-history-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const file = join(dir, 'webhooks.sqlite');
      database = { type: 'better-sqlite3', database: file };
      server = `SQLite ${String((new Database(':memory:').prepare('SELECT sqlite_version() AS v').get() as { v: string }).v)} (temp file, WAL)`;
      fill = () => fillSqlite(file, config.rows);
      let reader: Database.Database | undefined;
      raw = {
        all: (sql, params) => {
          reader ??= new Database(file, { readonly: true });
          return Promise.resolve(reader.prepare(sql.replace(/\$\d+/g, '?')).all(...params) as Record<string, unknown>[]);
        },
        close: () => {
          reader?.close();
          return Promise.resolve();
        },
      };
    } else {
      const name = `webhook_bench_${randomBytes(6).toString('hex')}`;
      const admin = new Client({ connectionString: config.postgresUrl, connectionTimeoutMillis: 5_000 });
      await admin.connect();
      server = `PostgreSQL ${String((await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0].v).split(' ')[0]} (scratch database)`;
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      cleanups.push(async () => {
        const dropper = new Client({ connectionString: config.postgresUrl, connectionTimeoutMillis: 5_000 });
        await dropper.connect();
        await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await dropper.end();
      });
      const url = new URL(config.postgresUrl);
      url.pathname = `/${name}`;
      database = { type: 'postgres', url: url.toString() };
      const pg = new Client({ connectionString: url.toString() });
      await pg.connect();
      raw = { all: async (sql, params) => (await pg.query(sql, params)).rows as Record<string, unknown>[], close: () => pg.end() };
      fill = async () => {
        await pg.query(POSTGRES_FILL(config.rows));
        // What autovacuum would have done by the time a table is this big: statistics and the visibility map.
        await pg.query('VACUUM ANALYZE webhook_invocations');
      };
    }

    const bare: Raw = raw;
    app = await NestFactory.createApplicationContext(HistoryBenchModule.configure(database), { logger: ['error', 'warn'] });
    const repo = app.get<InvocationRepository>(lib.InvocationRepository);
    const t0 = now();
    await fill();
    const fillMs = now() - t0;
    process.stderr.write(`filled ${config.rows.toLocaleString('en-US')} runs in ${(fillMs / 1000).toFixed(1)} s\n`);

    // Every statement the repository sends, so each shape's plan can be shown (the SQL is the module's own).
    // The module's SQL storage keeps its executor as its unit of work (an internal detail, for this probe only).
    type Probed = { unitOfWork: { read(sql: string, params: unknown[]): Promise<unknown> } };
    const executor = app.get<unknown, Probed>(lib.WebhookStorage).unitOfWork;
    let last: { sql: string; params: unknown[] } | undefined;
    const read = executor.read.bind(executor);
    executor.read = (sql: string, params: unknown[]) => {
      last = { sql, params };
      return read(sql, params);
    };
    const explain = async (): Promise<string[]> => {
      if (!last) return [];
      const { sql, params } = last;
      const rows = (await read(`${config.database === 'sqlite' ? 'EXPLAIN QUERY PLAN' : 'EXPLAIN'} ${sql}`, params)) as {
        rows: Record<string, unknown>[];
      };
      return rows.rows.map((r) => String(r.detail ?? r['QUERY PLAN']));
    };

    // The shapes' arguments, found with the bare driver (not timed): bot-0 holds a fifth of the runs.
    const bot = 'bot-0';
    const order = `SELECT created_at, id, idempotency_key FROM webhook_invocations WHERE bot_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET $2`;
    const botRows = Math.floor(config.rows / BOTS);
    const [deep] = await bare.all(order, [bot, Math.floor(botRows * 0.75)]);
    const [middle] = await bare.all(
      `SELECT id, idempotency_key, created_at FROM webhook_invocations WHERE bot_id = $1 AND idempotency_key IS NOT NULL ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET $2`,
      [bot, Math.floor(botRows / 6)],
    );
    const base = { limit: PAGE, outputsUpTo: 8192, inputsUpTo: 1024, errorUpTo: 8192 };
    const mid = END - SPAN / 2;
    const shapes: Array<[string, () => Promise<number>]> = [
      ['first page', async () => (await repo.listByBot(bot, base)).length],
      ['page 3/4 deep (cursor)', async () => (await repo.listByBot(bot, { ...base, after: cursorOf(deep) })).length],
      ['status = failed', async () => (await repo.listByBot(bot, { ...base, status: 'failed' })).length],
      [
        'status = queued, deep (cursor)',
        async () => (await repo.listByBot(bot, { ...base, status: 'queued', after: cursorOf(deep) })).length,
      ],
      ['trigger', async () => (await repo.listByBot(bot, { ...base, triggerId: triggerId(5) })).length],
      [
        'time range (one day)',
        async () => (await repo.listByBot(bot, { ...base, createdFrom: new Date(mid), createdBefore: new Date(mid + DAY) })).length,
      ],
      ['search: idempotency key', async () => (await repo.listByBot(bot, { ...base, search: String(middle.idempotency_key) })).length],
      ['search: invocation id', async () => (await repo.listByBot(bot, { ...base, search: String(middle.id) })).length],
      ['runs in the last 24 h (cap 10,000)', () => repo.countByBotSince(bot, new Date(END - DAY), 10_000)],
      ['last used of 20 triggers', async () => (await repo.lastUsedAt(Array.from({ length: TRIGGERS }, (_, t) => triggerId(t)))).size],
    ];
    const firstPage = await repo.listByBot(bot, base);
    const ids = firstPage.map((r) => r.id);
    const baselineSql = `SELECT ${COLUMNS} FROM webhook_invocations WHERE id IN (${ids.map((_, i) => `$${i + 1}`).join(', ')})`;
    if ((await bare.all(baselineSql, ids)).length !== PAGE) throw new Error('baseline: the first page did not read back by primary key');
    const baseline = await timed(config.reps, () => bare.all(baselineSql, ids));

    const figures: HistoryFigure[] = [];
    for (const [shape, call] of shapes) {
      const rows = await call();
      const plan = await explain();
      const t = await timed(config.reps, call);
      figures.push({ shape, ...t, rows, plan });
      process.stderr.write(`${shape}: ${rows} rows, p50 ${t.p50.toFixed(2)} ms, p95 ${t.p95.toFixed(2)} ms\n  ${plan.join('\n  ')}\n`);
    }
    return { rows: config.rows, fillMs, server, baseline, figures };
  } finally {
    await app?.close();
    await raw?.close();
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

function cursorOf(row: Record<string, unknown>): HistoryQuery['after'] {
  return { createdAt: new Date(Number(row.created_at)), id: String(row.id) };
}

dieOnUnhandled('history');
const config = childConfig<HistoryConfig>();
serveRpc({ run: () => run(config) });
announceReady({ port: 0 });
