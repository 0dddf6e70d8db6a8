import { Test } from '@nestjs/testing';
import type { INestApplicationContext } from '@nestjs/common';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreditAccounts } from '../credit-accounts.js';
import { CreditLedger } from '../credit-ledger.js';
import { WebhookUnitOfWork } from '../unit-of-work.js';
import { WebhookTriggerModule } from '../../webhook-trigger.module.js';

/** The SQLite unit of work on a real file: atomic units, group commit, nothing answered before COMMIT. */
describe('SqliteExecutor', () => {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-uow-'));
  const file = join(dir, 'uow.sqlite');
  let app: INestApplicationContext;
  let unitOfWork: WebhookUnitOfWork;
  let ledger: CreditLedger;
  let accounts: CreditAccounts;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: file } })],
    }).compile();
    app = await moduleRef.init();
    unitOfWork = app.get(WebhookUnitOfWork);
    ledger = app.get(CreditLedger);
    accounts = app.get(CreditAccounts);
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

  it('never overspends under concurrency', async () => {
    await accounts.setBalance('a', 5);
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => unitOfWork.run(async (tx) => ledger.tryDebit('a', 1, tx))));
    expect(outcomes.filter(Boolean)).toHaveLength(5);
    expect(committedBalance()).toBe(0);
  });
});
