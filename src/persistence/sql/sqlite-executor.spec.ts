import { Test } from '@nestjs/testing';
import type { INestApplicationContext } from '@nestjs/common';
import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreditAccounts } from '../credit-accounts.js';
import { CreditLedger } from '../credit-ledger.js';
import { InvocationRepository } from '../invocation.repository.js';
import { WebhookUnitOfWork } from '../unit-of-work.js';
import { sqliteConnectionOf, WEBHOOK_DATA_SOURCE } from '../typeorm/webhook-data-source.js';
import type { DataSource } from 'typeorm';
import { WebhookTriggerModule } from '../../webhook-trigger.module.js';

/** The SQLite unit of work on a real file: atomic units, group commit, nothing answered before COMMIT. */
describe('SqliteExecutor', () => {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-uow-'));
  const file = join(dir, 'uow.sqlite');
  let app: INestApplicationContext;
  let unitOfWork: WebhookUnitOfWork;
  let ledger: CreditLedger;
  let accounts: CreditAccounts;
  let invocations: InvocationRepository;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: file } })],
    }).compile();
    app = await moduleRef.init();
    unitOfWork = app.get(WebhookUnitOfWork);
    ledger = app.get(CreditLedger);
    accounts = app.get(CreditAccounts);
    invocations = app.get(InvocationRepository);
  });

  afterAll(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What another process would see: only committed data. */
  const committedBalance = (): number | undefined => {
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare(`SELECT credits FROM webhook_accounts WHERE id = 'a'`).get() as { credits: number } | undefined)?.credits;
    } finally {
      db.close();
    }
  };

  it("writes in WAL mode, fsyncing every COMMIT (synchronous FULL), with the units' statement journals in memory", () => {
    const writer = sqliteConnectionOf(app.get<DataSource>(WEBHOOK_DATA_SOURCE));
    const pragma = (name: string) => Object.values(writer.prepare(`PRAGMA ${name}`).all()[0])[0];
    expect(pragma('journal_mode')).toBe('wal');
    expect(pragma('synchronous')).toBe(2); // FULL: an answered run survives a power loss
    expect(pragma('temp_store')).toBe(2); // MEMORY: a SAVEPOINT's journal is no temporary file (bench/README.md)
  });

  it('a failed unit rolls back its own debit and leaves the other units of its batch alone', async () => {
    await accounts.setBalance('a', 10);
    const results = await Promise.allSettled([
      unitOfWork.run(async (tx) => ledger.tryDebit('a', 1, tx)),
      unitOfWork.run(async (tx) => {
        await ledger.tryDebit('a', 5, tx);
        throw new Error('insert failed');
      }),
      unitOfWork.run(async (tx) => ledger.tryDebit('a', 2, tx)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await accounts.getBalance('a')).toBe(7);
    expect(committedBalance()).toBe(7);
  });

  it('resolves a unit only once its work is committed (visible to another connection)', async () => {
    await accounts.setBalance('a', 100);
    const seen: (number | undefined)[] = [];
    await Promise.all(
      Array.from({ length: 20 }, () => unitOfWork.run(async (tx) => ledger.tryDebit('a', 1, tx)).then(() => seen.push(committedBalance()))),
    );
    // Each caller, when told "done", already finds its debit committed.
    seen.forEach((balance, i) => expect(balance).toBeLessThanOrEqual(100 - (i + 1)));
    expect(committedBalance()).toBe(80);
  });

  it("a read outside a unit never sees the unit's writes before they commit, nor does one from inside it without its tx", async () => {
    await accounts.setBalance('a', 50);
    let debited!: () => void;
    const debitMade = new Promise<void>((resolve) => (debited = resolve));
    let finish!: () => void;
    const finishing = new Promise<void>((resolve) => (finish = resolve));
    const unit = unitOfWork.run(async (tx) => {
      await ledger.tryDebit('a', 1, tx);
      debited();
      await finishing;
      // Inside the unit, without its tx, a read is a read like any other: the last commit, never waiting for the unit.
      return accounts.getBalance('a');
    });
    await debitMade;
    // The debit is made (on the unit's connection) and not committed: what an answer may show is the balance as stored.
    const committedMeanwhile = committedBalance();
    const readMeanwhile = await accounts.getBalance('a');
    finish(); // before asserting: a unit left open would hold every later write
    const readInside = await unit; // and ended before asserting, so a failure leaves nothing running
    expect(committedMeanwhile).toBe(50);
    expect(readMeanwhile).toBe(50);
    expect(readInside).toBe(50);
    expect(committedBalance()).toBe(49);
    expect(await accounts.getBalance('a')).toBe(49);
  });

  it('a read outside a unit never sees a write that waits for its batch to commit (an emitted output a crash would lose)', async () => {
    await accounts.setBalance('acct', 10);
    const id = 'inv_emitted_output_uncommitted_';
    const startedAt = new Date();
    await invocations.insert({
      id,
      triggerId: 'trg_AAAAAAAAAAAAAAAA',
      botId: 'stream',
      accountId: 'acct',
      inputs: {},
      credits: 0,
      idempotencyKey: null,
      requestHash: null,
      createdAt: startedAt,
      claim: { owner: 'here', startedAt, leaseExpiresAt: new Date(startedAt.getTime() + 60_000) },
    });
    const storedOutputs = (): unknown => {
      const db = new Database(file, { readonly: true });
      try {
        const row = db.prepare(`SELECT outputs FROM webhook_invocations WHERE id = ?`).get(id) as { outputs: string | null };
        return row.outputs === null ? null : JSON.parse(row.outputs);
      } finally {
        db.close();
      }
    };
    /** Whether another connection could start writing now (no: a batch holds the write lock until its COMMIT). */
    const batchOpen = (): boolean => {
      const db = new Database(file, { timeout: 0 });
      try {
        db.prepare('BEGIN IMMEDIATE').run();
        db.prepare('ROLLBACK').run();
        return false;
      } catch (error) {
        if ((error as { code?: string }).code === 'SQLITE_BUSY') return true;
        throw error;
      } finally {
        db.close();
      }
    };
    let appended = false;
    const append = invocations.appendOutput(id, 'here', { title: 'step 1', message: '1' }).then((ok) => ((appended = ok), ok));
    // The append's statement ran at once (the write connection was free) in this tick's batch, whose COMMIT comes
    // at the end of the tick (setImmediate): this read comes in between, as a status request served in the same
    // turn of the event loop would.
    const openThen = batchOpen();
    const seen = invocations.findById(id).then((r) => r?.outputs);
    const committedThen = storedOutputs();
    const appendedBeforeRead = appended;
    const [shown, stored] = await Promise.all([seen, append]); // both settled before asserting
    expect(openThen).toBe(true); // the append was waiting for its COMMIT...
    expect(committedThen).toBeNull(); // ...which had not come yet...
    expect(shown).toBeNull(); // ...and so the read shows no output
    expect(appendedBeforeRead).toBe(false);
    expect(stored).toBe(true);
    expect(batchOpen()).toBe(false);
    expect(storedOutputs()).toEqual([{ title: 'step 1', message: '1' }]);
    expect((await invocations.findById(id))?.outputs).toEqual([{ title: 'step 1', message: '1' }]);
  });

  it('holds every other write while a unit is open between its awaits, then runs them in arrival order', async () => {
    await accounts.setBalance('a', 10);
    const gate = () => {
      let open!: () => void;
      const held = new Promise<void>((resolve) => (open = resolve));
      return { held, open };
    };
    const [first, second] = [gate(), gate()];
    const settled: string[] = [];
    const unitA = unitOfWork.run(async (tx) => {
      await ledger.tryDebit('a', 1, tx);
      await first.held;
      return true;
    });
    const loneL = ledger.tryDebit('a', 2); // writes on their own, outside any unit
    const unitB = unitOfWork.run(async (tx) => {
      await ledger.tryDebit('a', 1, tx);
      await second.held;
      throw new Error('unit B fails');
    });
    const loneM = ledger.tryDebit('a', 3);
    const all = { unitA, loneL, unitB, loneM };
    for (const [name, p] of Object.entries(all))
      void p.then(
        () => settled.push(name),
        () => settled.push(`${name} failed`),
      );
    const turns = async () => {
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    await turns(); // nothing may run, nor commit, while unit A is open
    const whileA = { committed: committedBalance(), settled: [...settled] };
    first.open();
    await turns(); // A and L ran; B is open: M, and the COMMIT queued after it, wait behind B
    const whileB = { committed: committedBalance(), settled: [...settled] };
    second.open();
    const outcomes = await Promise.allSettled(Object.values(all));
    expect(whileA).toEqual({ committed: 10, settled: [] });
    expect(whileB).toEqual({ committed: 10, settled: [] });
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([
      true,
      true,
      'unit B fails',
      true,
    ]);
    // B rolled back its own debit only: M's, made after it, stays.
    expect(committedBalance()).toBe(10 - 1 - 2 - 3);
  });

  it('never overspends under concurrency', async () => {
    await accounts.setBalance('a', 5);
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => unitOfWork.run(async (tx) => ledger.tryDebit('a', 1, tx))));
    expect(outcomes.filter(Boolean)).toHaveLength(5);
    expect(committedBalance()).toBe(0);
  });
});

describe('SqliteExecutor connections', () => {
  it('closes both of its connections with the app: the last one to close checkpoints the WAL and removes it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'webhook-uow-'));
    const file = join(dir, 'close.sqlite');
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: file } })],
      }).compile();
      const app = await moduleRef.init();
      await app.get(CreditAccounts).setBalance('a', 3);
      expect(await app.get(CreditAccounts).getBalance('a')).toBe(3); // on the read connection
      expect(existsSync(`${file}-wal`)).toBe(true);
      await app.close();
      expect(existsSync(`${file}-wal`)).toBe(false); // a read connection left open would keep it
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
