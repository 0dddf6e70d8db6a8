// Bench-only instrumentation of better-sqlite3, installed in a contender before the library loads.
// It sees every connection the process prepares statements on (to read back the PRAGMAs the module
// really runs with) and, when asked, counts every statement execution, whoever issues it (TypeORM or
// direct better-sqlite3 use). Nothing in src/ is patched.
import Database from 'better-sqlite3';

export interface SqliteProbe {
  /** Connections that prepared at least one statement after install. */
  readonly connections: Set<Database.Database>;
  /** Statements executed (run/get/all/iterate) plus exec() calls, since install. 0 unless counting. */
  readonly executed: () => number;
  /** Leaves a connection of the bench's own (e.g. a reader) out of both. */
  ignore<T extends Database.Database>(db: T): T;
}

type Method = (...args: unknown[]) => unknown;

export function installSqliteProbe(options: { count: boolean }): SqliteProbe {
  const connections = new Set<Database.Database>();
  const ignored = new WeakSet<Database.Database>();
  let executed = 0;

  // The Statement class is not exported; take its prototype from a throw-away statement.
  const scratch = new Database(':memory:');
  const statementProto = Object.getPrototypeOf(scratch.prepare('SELECT 1')) as Record<string, Method>;
  scratch.close();

  const dbProto = Database.prototype as unknown as Record<string, Method>;
  const prepare = dbProto.prepare;
  dbProto.prepare = function (this: Database.Database, ...args: unknown[]) {
    if (!ignored.has(this)) connections.add(this);
    return prepare.apply(this, args);
  };
  if (options.count) {
    for (const name of ['run', 'get', 'all', 'iterate']) {
      const original = statementProto[name];
      statementProto[name] = function (this: Database.Statement, ...args: unknown[]) {
        if (!ignored.has(this.database)) executed++;
        return original.apply(this, args);
      };
    }
    const exec = dbProto.exec;
    dbProto.exec = function (this: Database.Database, ...args: unknown[]) {
      if (!ignored.has(this)) {
        connections.add(this);
        executed++;
      }
      return exec.apply(this, args);
    };
  }
  return {
    connections,
    executed: () => executed,
    ignore: (db) => {
      ignored.add(db);
      connections.delete(db);
      return db;
    },
  };
}

/** The module's writable file connection (not :memory:, not read-only), if one was seen. */
export function fileConnection(probe: SqliteProbe): Database.Database | undefined {
  return [...probe.connections].find((db) => db.open && !db.memory && !db.readonly);
}
