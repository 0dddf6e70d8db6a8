import Database from 'better-sqlite3';

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
  return withDb(dbFile, (db) =>
    db.prepare('SELECT * FROM webhook_invocations WHERE trigger_id = ? ORDER BY created_at, id').all(triggerId) as InvocationRow[],
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
