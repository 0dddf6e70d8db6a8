import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Client } from 'pg';
import { InvocationRepository, WebhookTriggerModule, WebhookTriggersAdmin } from '../../src/index.js';
import { newInvocationId } from '../../src/keys/ids.js';
import type { NewInvocation } from '../../src/persistence/records.js';
import { WebhookStorage, type AcceptOutcome } from '../../src/persistence/webhook-storage.js';
import { PostgresWebhookStorage } from '../../src/persistence/sql/sql-webhook-storage.js';
import { EchoBot } from '../fixtures/bots.js';
import { sqlExecutorOf } from '../helpers/db.js';
import { sleep, until } from '../helpers/http.js';
import { createScratchDatabase, serviceUrl } from '../helpers/services.js';

const baseUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');

if (!baseUrl) {
  it.todo('PostgreSQL group commit suite NOT RUN: set WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test');
} else {
  describe('the accept step on PostgreSQL: group commit (one transaction per batch, answers as if one at a time)', () => {
    let db: { url: string; drop: () => Promise<void> };
    let nodes: INestApplication[];
    let sql: Client;

    /** One "node": its own pool and its own batcher, on the shared database. */
    async function node(): Promise<INestApplication> {
      const moduleRef = await Test.createTestingModule({
        imports: [WebhookTriggerModule.forRoot({ database: { type: 'postgres', url: db.url }, shutdownGraceMs: 0 })],
        providers: [EchoBot],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      return app;
    }

    beforeAll(async () => {
      db = await createScratchDatabase(baseUrl);
      nodes = [await node()];
      nodes.push(await node());
      sql = new Client({ connectionString: db.url });
      await sql.connect();
    });

    afterAll(async () => {
      await sql?.end();
      for (const app of nodes ?? []) await app.close();
      await db?.drop();
    });

    const acceptorOf = (app: INestApplication) => app.get(WebhookStorage);
    const admin = () => nodes[0].get(WebhookTriggersAdmin);

    /** Counts the transactions an acceptor opens. */
    function countTransactions(app: INestApplication): { count: number } {
      const executor = sqlExecutorOf(app);
      const counter = { count: 0 };
      const run = executor.run.bind(executor);
      jest.spyOn(executor, 'run').mockImplementation((work) => {
        counter.count++;
        return run(work);
      });
      return counter;
    }

    let n = 0;
    function run(accountId: string, fields: Partial<NewInvocation> = {}): NewInvocation {
      return {
        id: newInvocationId(),
        triggerId: `trg_group_commit_${String(n++).padStart(4, '0')}`,
        botId: 'echo',
        accountId,
        inputs: { n },
        credits: 1,
        idempotencyKey: null,
        requestHash: null,
        createdAt: new Date(),
        ...fields,
      };
    }

    const now = () => new Date(Date.now() - 86_400_000);
    const balance = async (accountId: string) =>
      Number((await sql.query(`SELECT credits FROM webhook_accounts WHERE id = $1`, [accountId])).rows[0].credits);
    const storedIds = async (accountId: string) =>
      (await sql.query(`SELECT id FROM webhook_invocations WHERE account_id = $1`, [accountId])).rows.map((r) => r.id as string).sort();

    /** `count` runs of `accountId` (given credits), accepted on the first node and claimed by `owner` until `lease`. */
    async function runningRuns(
      accountId: string,
      count: number,
      owner: string,
      lease = new Date(Date.now() + 30_000),
    ): Promise<NewInvocation[]> {
      await admin().setCredits(accountId, 100);
      const runs = Array.from({ length: count }, () => run(accountId));
      await Promise.all(runs.map((r) => acceptorOf(nodes[0]).accept(r, now())));
      const repository = nodes[0].get(InvocationRepository);
      const at = new Date();
      await Promise.all(runs.map((r) => repository.markRunning(r.id, at, owner, lease)));
      return runs;
    }

    afterEach(() => jest.restoreAllMocks());

    it('is the acceptor the module binds on PostgreSQL', () => {
      expect(acceptorOf(nodes[0])).toBeInstanceOf(PostgresWebhookStorage);
    });

    it('an account one credit short of a whole batch: 10 credits, 11 requests at once → 10 accepted, the balance 0, never below', async () => {
      await admin().setCredits('short', 10);
      const runs = Array.from({ length: 11 }, () => run('short'));
      const outcomes = await Promise.all(runs.map((r) => acceptorOf(nodes[0]).accept(r, now())));

      expect(outcomes.filter((o) => o.kind === 'accepted')).toHaveLength(10);
      expect(outcomes[10]).toEqual({ kind: 'refused', funded: true });
      expect(await storedIds('short')).toHaveLength(10);
      expect(await balance('short')).toBe(0);
    });

    it('a batch split by too few credits: 10 credits, 30 requests in one transaction → the first 10 in arrival order accepted, 20 refused', async () => {
      await admin().setCredits('split', 10);
      const transactions = countTransactions(nodes[0]);
      const runs = Array.from({ length: 30 }, () => run('split'));
      const outcomes = await Promise.all(runs.map((r) => acceptorOf(nodes[0]).accept(r, now())));

      expect(transactions.count).toBe(1);
      expect(outcomes.slice(0, 10)).toEqual(Array(10).fill({ kind: 'accepted' }));
      expect(outcomes.slice(10)).toEqual(Array(20).fill({ kind: 'refused', funded: true }));
      expect(await storedIds('split')).toEqual(
        runs
          .slice(0, 10)
          .map((r) => r.id)
          .sort(),
      );
      expect(await balance('split')).toBe(0);
    });

    it('a batch its accounts can pay for, without idempotency keys, is ONE statement and no transaction', async () => {
      await admin().setCredits('fast-a', 100);
      await admin().setCredits('fast-b', 100);
      const transactions = countTransactions(nodes[0]);
      const writes = jest.spyOn(sqlExecutorOf(nodes[0]), 'write');
      const runs = [...Array.from({ length: 12 }, () => run('fast-a')), ...Array.from({ length: 8 }, () => run('fast-b', { credits: 2 }))];
      const outcomes = await Promise.all(runs.map((r) => acceptorOf(nodes[0]).accept(r, now())));

      expect(outcomes).toEqual(Array(20).fill({ kind: 'accepted' }));
      expect(transactions.count).toBe(0);
      expect(writes).toHaveBeenCalledTimes(1);
      expect(await storedIds('fast-a')).toHaveLength(12);
      expect([await balance('fast-a'), await balance('fast-b')]).toEqual([88, 84]);
    });

    it('mixed costs in one batch are decided in arrival order, as one-at-a-time transactions would (5 credits: 3 ✓, 3 ✗, 2 ✓, 1 ✗)', async () => {
      await admin().setCredits('mixed', 5);
      const runs = [3, 3, 2, 1].map((credits) => run('mixed', { credits }));
      const outcomes = await Promise.all(runs.map((r) => acceptorOf(nodes[0]).accept(r, now())));
      expect(outcomes.map((o) => o.kind)).toEqual(['accepted', 'refused', 'accepted', 'refused']);
      expect(await storedIds('mixed')).toEqual([runs[0].id, runs[2].id].sort());
      expect(await balance('mixed')).toBe(0);
    });

    it('a batch split by too few credits whose second step fails: the runs its first step stored and charged are answered accepted, only the others get the error', async () => {
      await admin().setCredits('split-paid', 10);
      await admin().setCredits('split-short', 0);
      // The short account's row is held elsewhere: the second step (the one-at-a-time transaction) waits on it, and is cancelled.
      const holder = new Client({ connectionString: db.url });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT credits FROM webhook_accounts WHERE id = 'split-short' FOR UPDATE`);
        const paid = run('split-paid');
        const short = run('split-short');
        const answers = Promise.allSettled([paid, short].map((r) => acceptorOf(nodes[0]).accept(r, now())));
        const waiting = async () =>
          (
            await sql.query(
              `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'`,
            )
          ).rows.map((r) => Number(r.pid));
        await until(async () => (await waiting()).length === 1);
        await sql.query('SELECT pg_cancel_backend($1)', [(await waiting())[0]]);
        const [paidAnswer, shortAnswer] = await answers;

        expect(await storedIds('split-paid')).toEqual([paid.id]);
        expect(await balance('split-paid')).toBe(9);
        expect(paidAnswer).toEqual({ status: 'fulfilled', value: { kind: 'accepted' } });
        expect(shortAnswer.status).toBe('rejected');
        expect(await storedIds('split-short')).toEqual([]);
      } finally {
        await holder.query('ROLLBACK');
        await holder.end();
      }
    });

    it('idempotency repeats inside one batch: the first request is stored and charged once, the others answer its id', async () => {
      await admin().setCredits('keys', 100);
      const transactions = countTransactions(nodes[0]);
      const same = { triggerId: 'trg_group_commit_keys', idempotencyKey: 'order-1', requestHash: 'hash-a' };
      const runs = [run('keys', same), run('keys', same), run('keys', { ...same, requestHash: 'hash-b' }), run('keys', same)];
      const outcomes = await Promise.all(runs.map((r) => acceptorOf(nodes[0]).accept(r, now())));

      expect(transactions.count).toBe(1);
      const first = { id: runs[0].id, requestHash: 'hash-a' };
      expect(outcomes).toEqual<AcceptOutcome[]>([
        { kind: 'accepted' },
        { kind: 'repeat', earlier: first },
        { kind: 'repeat', earlier: first }, // the service answers 422: same key, another body
        { kind: 'repeat', earlier: first },
      ]);
      expect(await storedIds('keys')).toEqual([runs[0].id]);
      expect(await balance('keys')).toBe(99);

      // Across batches, and on another node: the same run.
      const later = await acceptorOf(nodes[1]).accept(run('keys', same), now());
      expect(later).toEqual({ kind: 'repeat', earlier: first });
      // Once the key's time to live has passed, the key is free again: a new run, charged.
      const fresh = run('keys', same);
      expect(await acceptorOf(nodes[1]).accept(fresh, new Date(Date.now() + 1000))).toEqual({ kind: 'accepted' });
      expect(await storedIds('keys')).toEqual([runs[0].id, fresh.id].sort());
      expect(await balance('keys')).toBe(98);
    });

    it('a refused run on an account never opened says so, and stores nothing', async () => {
      const r = run('never-opened');
      expect(await acceptorOf(nodes[0]).accept(r, now())).toEqual({ kind: 'refused', funded: false });
      expect(await storedIds('never-opened')).toEqual([]);
    });

    it('two nodes batching on one account at once never overspend: 15 credits, 2 × 20 requests → exactly 15 accepted', async () => {
      await admin().setCredits('shared', 15);
      const runs = nodes.map(() => Array.from({ length: 20 }, () => run('shared')));
      const outcomes = (await Promise.all(nodes.map((app, i) => Promise.all(runs[i].map((r) => acceptorOf(app).accept(r, now())))))).flat();
      const accepted = runs.flat().filter((_, i) => outcomes[i].kind === 'accepted');

      expect(accepted).toHaveLength(15);
      expect(outcomes.filter((o) => o.kind === 'refused')).toHaveLength(25);
      expect(await storedIds('shared')).toEqual(accepted.map((r) => r.id).sort());
      expect(await balance('shared')).toBe(0);
    });

    it('claims made together are one statement; a run dispatched twice in that batch is claimed once', async () => {
      await admin().setCredits('claims', 100);
      const runs = Array.from({ length: 20 }, () => run('claims'));
      await Promise.all(runs.map((r) => acceptorOf(nodes[0]).accept(r, now())));
      const repository = nodes[0].get(InvocationRepository);
      const writes = jest.spyOn(sqlExecutorOf(nodes[0]), 'write');
      const at = new Date();
      const lease = new Date(at.getTime() + 30_000);
      // A run cancelled while queued is in the batch too: it never starts.
      const cancelled = run('claims');
      await acceptorOf(nodes[0]).accept(cancelled, now());
      expect(await repository.transition(cancelled.id, 'queued', 'cancelled', { finishedAt: at })).toBe(true);
      writes.mockClear();
      const claims = await Promise.all([...runs, runs[0], cancelled].map((r) => repository.markRunning(r.id, at, 'owner-a', lease)));

      expect(writes).toHaveBeenCalledTimes(1);
      expect(claims.slice(0, 20).map((c) => c?.id)).toEqual(runs.map((r) => r.id));
      expect(claims.slice(0, 20).every((c) => c?.status === 'running' && c.owner === 'owner-a' && c.attempts === 1)).toBe(true);
      expect(claims[20]).toBeNull(); // the second dispatch of runs[0]
      expect(claims[21]).toBeNull();
      expect((await repository.findById(cancelled.id))?.status).toBe('cancelled');
      // Another process cannot claim them again.
      expect(await nodes[1].get(InvocationRepository).markRunning(runs[1].id, at, 'owner-b', lease)).toBeNull();
    });

    it('runs before new work: while its node is behind, an accept batch waits for the claims in flight on its node; otherwise it goes at once', async () => {
      await admin().setCredits('gate', 100);
      const repository = nodes[0].get(InvocationRepository);
      const executor = sqlExecutorOf(nodes[0]);
      const write = executor.write.bind(executor);
      const order: string[] = [];
      jest.spyOn(executor, 'write').mockImplementation(async (text, params, tx) => {
        const kind = text.includes('INSERT INTO webhook_invocations')
          ? 'accept'
          : text.includes("SET status = 'running'")
            ? 'claim'
            : 'other';
        order.push(`${kind} sent`);
        const result = await write(text, params, tx);
        order.push(`${kind} answered`);
        return result;
      });
      /** Claims of 3 queued runs and 2 new triggers in the same turn, as a node running bots sees them. */
      async function claimsThenTriggers(runsWaiting: boolean): Promise<void> {
        const queued = Array.from({ length: 3 }, () => run('gate'));
        await Promise.all(queued.map((r) => acceptorOf(nodes[0]).accept(r, now())));
        order.length = 0;
        const at = new Date();
        const claims = queued.map((r) => repository.markRunning(r.id, at, 'owner-gate', new Date(at.getTime() + 30_000)));
        const outcomes = await Promise.all(
          Array.from({ length: 2 }, () => acceptorOf(nodes[0]).accept(run('gate', { runsWaiting }), now())),
        );
        expect((await Promise.all(claims)).map((c) => c?.status)).toEqual(Array(3).fill('running'));
        expect(outcomes).toEqual(Array(2).fill({ kind: 'accepted' }));
      }

      await claimsThenTriggers(true);
      expect(order).toEqual(['claim sent', 'claim answered', 'accept sent', 'accept answered']);
      // Not behind (a worker's claim of the run before, at one connection): the accept does not wait for it.
      await claimsThenTriggers(false);
      expect(order.slice(0, 2)).toEqual(['claim sent', 'accept sent']);
      expect(await storedIds('gate')).toHaveLength(10);
    });

    it('a run accepted as running holds its whole lease from when its row is written, however long its batch waited: recovery never finds it expired as it starts', async () => {
      const LEASE_MS = 1_000;
      const HELD_MS = 1_500; // longer than the lease: counted from the accept call, it ran out before the COMMIT
      await admin().setCredits('lease-held', 10);
      const claimed = (fields: Partial<NewInvocation> = {}): NewInvocation => {
        const at = new Date();
        return run('lease-held', {
          claim: { owner: 'owner-lease', startedAt: at, leaseExpiresAt: new Date(at.getTime() + LEASE_MS) },
          ...fields,
        });
      };
      const leaseOf = async (id: string) =>
        Number((await sql.query(`SELECT lease_expires_at FROM webhook_invocations WHERE id = $1`, [id])).rows[0].lease_expires_at);
      // Another transaction holds the account's row: the batch's statement waits for its lock.
      const holder = new Client({ connectionString: db.url });
      await holder.connect();
      let released = 0;
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT credits FROM webhook_accounts WHERE id = 'lease-held' FOR UPDATE`);
        // One batch: a free run, first (a row the statement could write before the debit waited for the lock), and a run of the account.
        const locked = [claimed({ credits: 0 }), claimed()];
        const first = Promise.all(locked.map((r) => acceptorOf(nodes[0]).accept(r, now())));
        await until(
          async () =>
            (
              await sql.query(
                `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO webhook_invocations%'`,
              )
            ).rows.length === 1,
        );
        // Another accept meanwhile waits for the next batch, behind the one in flight.
        const queued = claimed({ credits: 0 });
        const second = acceptorOf(nodes[0]).accept(queued, now());
        await sleep(HELD_MS);
        await holder.query('COMMIT');
        released = Date.now();
        expect(await Promise.all([first, second])).toEqual([[{ kind: 'accepted' }, { kind: 'accepted' }], { kind: 'accepted' }]);
        const answered = Date.now();
        const ids = [...locked, queued].map((r) => r.id);
        // None is expired as its runner starts it; each lease is a whole lease from its write (a loose upper bound).
        const expired = (await nodes[0].get(InvocationRepository).listExpiredLeases(new Date(answered), 1000)).map((r) => r.id);
        expect(expired.filter((id) => ids.includes(id))).toEqual([]);
        for (const id of ids) {
          expect(await leaseOf(id)).toBeGreaterThanOrEqual(released + LEASE_MS - 100);
          expect(await leaseOf(id)).toBeLessThanOrEqual(answered + LEASE_MS + 100);
        }
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        await holder.end();
      }
    });

    it("outcomes stored together are one statement, each only by its run's owner while it runs", async () => {
      const runs = await runningRuns('finishes', 6, 'owner-a');
      const repository = nodes[0].get(InvocationRepository);
      const writes = jest.spyOn(sqlExecutorOf(nodes[0]), 'write');
      const outcome = (i: number) => ({ finishedAt: new Date(), outputs: [{ title: 't', message: String(i) }], error: null });
      const stored = await Promise.all(
        runs.map((r, i) =>
          repository.transition(r.id, 'running', i === 5 ? 'failed' : 'succeeded', outcome(i), { owner: i === 4 ? 'owner-b' : 'owner-a' }),
        ),
      );

      expect(writes).toHaveBeenCalledTimes(1);
      expect(stored).toEqual([true, true, true, true, false, true]); // runs[4]: not its owner
      const rows = await Promise.all(runs.map((r) => repository.findById(r.id)));
      expect(rows.map((r) => r?.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded', 'running', 'failed']);
      expect(rows[2]?.outputs).toEqual([{ title: 't', message: '2' }]);
      // Finished once: a second outcome for the same run changes nothing.
      expect(await repository.transition(runs[0].id, 'running', 'failed', outcome(9), { owner: 'owner-a' })).toBe(false);
    });

    it('a lease renewal never waits on a run a grouped outcome holds, so the two never deadlock (PostgreSQL aborted the outcomes under load, and their finished runs were recovered as interrupted)', async () => {
      const at = new Date();
      const first = new Date(at.getTime() + 15_000);
      const runs = await runningRuns('leases', 3, 'owner-l', first);
      const ids = runs.map((r) => r.id);
      const repository = nodes[0].get(InvocationRepository);
      const leaseOf = async (id: string) =>
        Number((await sql.query(`SELECT lease_expires_at FROM webhook_invocations WHERE id = $1`, [id])).rows[0].lease_expires_at);
      // Another connection holds runs[1]'s row, as an outcome batch does from its UPDATE to its COMMIT, and
      // then wants runs[0]'s: the order that deadlocked against a renewal locking runs[0] first.
      const holder = new Client({ connectionString: db.url });
      await holder.connect();
      let renewal: Promise<void> | undefined;
      try {
        await holder.query('BEGIN');
        await holder.query(`UPDATE webhook_invocations SET finished_at = finished_at WHERE id = $1`, [runs[1].id]);
        const renewed = new Date(at.getTime() + 30_000);
        renewal = repository.renewLeases('owner-l', ids, renewed);
        const waited = await Promise.race([renewal.then(() => 'renewed'), sleep(2_000).then(() => 'still waiting')]);
        expect(waited).toBe('renewed');
        await holder.query(`UPDATE webhook_invocations SET finished_at = finished_at WHERE id = $1`, [runs[0].id]);
        await holder.query('COMMIT');
        expect(await leaseOf(runs[0].id)).toBe(renewed.getTime());
        expect(await leaseOf(runs[2].id)).toBe(renewed.getTime());
        expect(await leaseOf(runs[1].id)).toBe(first.getTime()); // held meanwhile: left to the next renewal
        await repository.renewLeases('owner-l', ids, renewed);
        expect(await leaseOf(runs[1].id)).toBe(renewed.getTime());
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        await renewal?.catch(() => undefined);
        await holder.end();
      }
    });

    it('grouped outcomes that PostgreSQL aborts in a deadlock are written again, not lost (their runs would be recovered as interrupted)', async () => {
      const runs = await runningRuns('deadlock', 2, 'owner-d');
      const repository = nodes[0].get(InvocationRepository);
      const deadlocks = async () =>
        Number((await sql.query(`SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`)).rows[0].deadlocks);
      const before = await deadlocks();
      // Another transaction holds runs[1]; the batch of both outcomes takes runs[0], then waits for runs[1];
      // the other transaction then wants runs[0]: a deadlock, and PostgreSQL aborts the batch (it waited first).
      const holder = new Client({ connectionString: db.url });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`UPDATE webhook_invocations SET finished_at = finished_at WHERE id = $1`, [runs[1].id]);
        const outcome = { finishedAt: new Date(), outputs: [{ title: 'ok', message: 'stored' }], error: null };
        const stored = Promise.all(runs.map((r) => repository.transition(r.id, 'running', 'succeeded', outcome, { owner: 'owner-d' })));
        stored.catch(() => undefined); // awaited below
        // The batch has taken runs[0] and waits for runs[1]'s lock.
        const waitingForLock = async () =>
          Number(
            (await sql.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))
              .rows[0].n,
          ) > 0;
        await until(waitingForLock, 5_000, 'the batch to wait for the held row');
        // A pause on purpose: PostgreSQL looks for a deadlock in the backend whose wait reaches deadlock_timeout (1 s)
        // first, and aborts it; the batch's wait must begin well before the holder's for the batch to be the one.
        await sleep(300);
        await holder.query(`UPDATE webhook_invocations SET finished_at = finished_at WHERE id = $1`, [runs[0].id]);
        await holder.query('COMMIT');
        expect(await stored).toEqual([true, true]);
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        await holder.end();
      }
      const rows = await Promise.all(runs.map((r) => repository.findById(r.id)));
      expect(rows.map((r) => r?.status)).toEqual(['succeeded', 'succeeded']);
      expect(rows[0]?.outputs).toEqual([{ title: 'ok', message: 'stored' }]);
      // The deadlock did happen (PostgreSQL reports its counters within a second or so).
      await until(async () => (await deadlocks()) > before, 5_000, 'PostgreSQL to count the deadlock');
    });

    it.each(['cancelled', 'failed', 'timed_out'] as const)(
      "a grouped outcome never overwrites a run stored %s meanwhile (as a cancel that lands before the bot's result)",
      async (terminal) => {
        const runs = await runningRuns('ended', 3, 'owner-a');
        const repository = nodes[0].get(InvocationRepository);
        // Ended elsewhere (a cancel on another node: no owner condition), as the service stores it.
        const ended = { finishedAt: new Date(), error: { message: 'ended elsewhere', code: terminal } };
        expect(await nodes[1].get(InvocationRepository).transition(runs[1].id, 'running', terminal, ended)).toBe(true);
        const writes = jest.spyOn(sqlExecutorOf(nodes[0]), 'write');
        const outcome = { finishedAt: new Date(), outputs: [{ title: 'late', message: 'result' }], error: null };
        const stored = await Promise.all(
          runs.map((r) => repository.transition(r.id, 'running', 'succeeded', outcome, { owner: 'owner-a' })),
        );

        expect(writes).toHaveBeenCalledTimes(1);
        expect(stored).toEqual([true, false, true]);
        const rows = await Promise.all(runs.map((r) => repository.findById(r.id)));
        expect(rows.map((r) => r?.status)).toEqual(['succeeded', terminal, 'succeeded']);
        expect(rows[1]).toMatchObject({ outputs: null, error: ended.error });
      },
    );

    it('one key on two nodes at once (a free bot, so no account row is locked) → one run, the other answers it', async () => {
      const same = { triggerId: 'trg_group_commit_free', credits: 0, idempotencyKey: 'free-1', requestHash: 'h' };
      const runs = [run('free', same), run('free', same)];
      const outcomes = await Promise.all(runs.map((r, i) => acceptorOf(nodes[i]).accept(r, now())));
      const winner = outcomes[0].kind === 'accepted' ? runs[0] : runs[1];

      expect(outcomes.map((o) => o.kind).sort()).toEqual(['accepted', 'repeat']);
      expect(outcomes.find((o) => o.kind === 'repeat')).toEqual({ kind: 'repeat', earlier: { id: winner.id, requestHash: 'h' } });
      expect(await storedIds('free')).toEqual([winner.id]);
    });
  });
}
