import type { NewInvocation } from '../records.js';
import type { AcceptOutcome } from '../webhook-storage.js';
import type { WebhookTransaction } from '../unit-of-work.js';
import { Batcher } from '../../batching/batcher.js';
import type { Clock } from '../../time/clock.js';
import { text } from './sql-rows.js';
import type { SqlExecutor } from './sql-executor.js';

/** One request of a batch. */
interface Pending {
  run: NewInvocation;
  since: number;
  /** When the accept was asked (the module's clock): a claim's lease is moved on by the wait from then to its statement. */
  askedAt: number;
}

/** The run that holds an idempotency key. */
type KeyHolder = { id: string; requestHash: string | null };

const keyOf = (triggerId: string, key: string): string => `${triggerId}\u0000${key}`;

/** A batch's runs as rows, each column bound as one array (`columnsOf`): one SQL text whatever the batch size. */
const ROWS =
  `unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::bigint[], ` +
  `?::text[], ?::bigint[], ?::text[], ?::bigint[], ?::int[], ?::text[]) ` +
  `AS r(id, trigger_id, bot_id, account_id, inputs, credits, idempotency_key, request_hash, created_at, ` +
  `status, started_at, owner, lease_expires_at, attempts, trace_context)`;

/** The columns of `ROWS` a stored run takes, and their values (a run its accept step claimed is stored `running`). */
const STORED_COLUMNS =
  'id, trigger_id, bot_id, account_id, status, inputs, credits, idempotency_key, request_hash, created_at, started_at, owner, lease_expires_at, attempts, trace_context';
/**
 * A claimed run's lease as its row is written: the lease bound (moved on by the wait before the statement was sent,
 * `columnsOf`), moved on again by the time the statement itself waited (for an account's lock) before writing the row,
 * as the database measures it. So a run accepted as running holds a whole `runLeaseMs` from its write, however long
 * its batch waited: recovery never finds it expired as its process starts it (the first renewal comes within a third
 * of a lease after that).
 */
const LEASE_AS_WRITTEN = `r.lease_expires_at + (extract(epoch from clock_timestamp() - statement_timestamp()) * 1000)::bigint`;
const STORED_VALUES =
  'r.id, r.trigger_id, r.bot_id, r.account_id, r.status, r.inputs, r.credits, r.idempotency_key, r.request_hash, r.created_at, r.started_at, r.owner, ' +
  `${LEASE_AS_WRITTEN}, r.attempts, r.trace_context`;

/** The arrays `ROWS` binds, in its order, for a statement sent at `sentAt` (the module's clock). */
const columnsOf = (batch: Pending[], sentAt: number): unknown[][] => {
  const runs = batch.map((p) => p.run);
  return [
    runs.map((r) => r.id),
    runs.map((r) => r.triggerId),
    runs.map((r) => r.botId),
    runs.map((r) => r.accountId),
    runs.map((r) => JSON.stringify(r.inputs)),
    runs.map((r) => r.credits),
    runs.map((r) => r.idempotencyKey),
    runs.map((r) => r.requestHash),
    runs.map((r) => r.createdAt.getTime()),
    runs.map((r) => (r.claim ? 'running' : 'queued')),
    runs.map((r) => r.claim?.startedAt.getTime() ?? null),
    runs.map((r) => r.claim?.owner ?? null),
    batch.map((p) => (p.run.claim ? p.run.claim.leaseExpiresAt.getTime() + Math.max(0, sentAt - p.askedAt) : null)),
    runs.map((r) => (r.claim ? 1 : 0)),
    runs.map((r) => r.traceContext ?? null),
  ];
};

/**
 * The accepted rows (`ROWS`), and the debit of what was stored, per account, in the same statement: the UPDATE reads the INSERT's RETURNING, so a
 * row left out is not charged. Answers the stored ids, each with the number of accounts debited.
 */
const INSERT_AND_DEBIT =
  `WITH stored AS (` +
  `INSERT INTO webhook_invocations (${STORED_COLUMNS}) SELECT ${STORED_VALUES} FROM ${ROWS} ` +
  // A key taken meanwhile by a transaction that did not lock the account (a free bot on an account never
  // opened): that row is left out, and its request answered as a repeat of the other one after COMMIT.
  `ON CONFLICT DO NOTHING RETURNING id, account_id, credits), ` +
  `debited AS (UPDATE webhook_accounts AS a SET credits = a.credits - d.amount ` +
  `FROM (SELECT account_id, sum(credits) AS amount FROM stored WHERE credits > 0 GROUP BY account_id) AS d ` +
  `WHERE a.id = d.account_id AND a.credits >= d.amount RETURNING a.id) ` +
  `SELECT id, (SELECT count(*) FROM debited) AS debited FROM stored`;

/**
 * The fast path: a batch without idempotency keys, as ONE statement (atomic on its own, no transaction to
 * open): each account is debited the whole batch's cost only if it covers all of it (the UPDATE re-checks
 * the balance under the row lock, so concurrent batches on other nodes never overspend), and the rows are
 * stored only for the accounts debited (and free runs). Answers the ids stored; the others go the exact way.
 */
const ACCEPT_IF_AFFORDABLE =
  `WITH r AS (SELECT * FROM ${ROWS}), ` +
  `debited AS (UPDATE webhook_accounts AS a SET credits = a.credits - d.amount ` +
  `FROM (SELECT account_id, sum(credits) AS amount FROM r WHERE credits > 0 GROUP BY account_id) AS d ` +
  `WHERE a.id = d.account_id AND a.credits >= d.amount RETURNING a.id), ` +
  // Joined with the count of the debits, so no row (a free run's neither) is written before every debit took its
  // account's lock: a claimed run's lease counts from then (LEASE_AS_WRITTEN).
  `stored AS (INSERT INTO webhook_invocations (${STORED_COLUMNS}) SELECT ${STORED_VALUES} FROM r, (SELECT count(*) FROM debited) AS locked ` +
  `WHERE r.credits = 0 OR r.account_id IN (SELECT id FROM debited) RETURNING id) ` +
  `SELECT id FROM stored`;

/**
 * The accept step on PostgreSQL with group commit: the requests that arrive while one batch is in flight
 * on this node share the next one.
 * - A batch without idempotency keys whose accounts can pay for all of it (the usual case) is ONE
 *   statement (`ACCEPT_IF_AFFORDABLE`): one round trip, one commit, each account's row locked for that
 *   statement only.
 * - Otherwise (keys, or an account short of credits: those requests only), one transaction decides every
 *   request in arrival order exactly as one-at-a-time transactions would: lock the accounts it charges
 *   (`FOR UPDATE`, in id order, so nodes never deadlock), look up its idempotency keys, accept a request
 *   when the credits left after the earlier ones cover it (else 402), answer a repeated key (inside the
 *   batch or before it) with the earlier run, then one multi-row INSERT with one debit per account (one
 *   statement), COMMIT: four round trips for the batch.
 * Every answer comes after the COMMIT that holds it.
 */
export class PostgresRunAcceptor {
  private readonly batches = new Batcher<Pending, AcceptOutcome>((batch) => this.acceptBatch(batch));

  constructor(
    private readonly db: SqlExecutor,
    /**
     * The claims in flight on this node. While the node is behind on its runs (a run of the batch was accepted
     * with runs waiting to start), the batch waits for them (runs before new work): a node whose database is the
     * bottleneck then answers triggers at the pace its runs start, instead of piling up queued runs, each costing
     * a claim more than a run accepted as running, until the backlog answers 503. A node that is not behind
     * (a worker's claim of the run before, at one connection) never waits.
     */
    private readonly claimsInFlight: () => Promise<void> | undefined,
    private readonly clock: Clock,
  ) {}

  accept(run: NewInvocation, since: Date): Promise<AcceptOutcome> {
    return this.batches.push({ run, since: since.getTime(), askedAt: this.clock.now() });
  }

  private async acceptBatch(batch: Pending[]): Promise<Array<AcceptOutcome | Promise<AcceptOutcome>>> {
    if (batch.some((p) => p.run.runsWaiting)) await this.claimsInFlight();
    if (batch.some((p) => p.run.idempotencyKey !== null)) return this.db.run((tx) => this.decide(batch, tx));
    const stored = await this.acceptIfAffordable(batch);
    if (stored.size === batch.length) return batch.map(() => ({ kind: 'accepted' }));
    // The requests of accounts that could not pay for all of theirs: decided one by one, in arrival order.
    const rest = batch.filter((p) => !stored.has(p.run.id));
    let outcomes: Map<string, AcceptOutcome | Promise<AcceptOutcome>>;
    try {
      const decided = await this.db.run((tx) => this.decide(rest, tx));
      outcomes = new Map(rest.map((p, i) => [p.run.id, decided[i]]));
    } catch (error) {
      // The first step's runs are committed and charged whatever befell this one: they are accepted (and started);
      // only the requests this step was deciding hear its error.
      const failed = Promise.reject(error);
      failed.catch(() => undefined); // handled by each caller it is handed to
      outcomes = new Map(rest.map((p) => [p.run.id, failed]));
    }
    return batch.map((p) => outcomes.get(p.run.id) ?? { kind: 'accepted' });
  }

  private async acceptIfAffordable(batch: Pending[]): Promise<Set<string>> {
    const { rows } = await this.db.write(ACCEPT_IF_AFFORDABLE, columnsOf(batch, this.clock.now()));
    return new Set(rows.map((row) => text(row.id)));
  }

  private async decide(batch: Pending[], tx: WebhookTransaction): Promise<AcceptOutcome[]> {
    const balances = await this.lockAccounts(batch, tx);
    const earlier = await this.findKeys(batch, tx);

    // Arrival order, as if each request had its own transaction after the previous one.
    const outcomes: (AcceptOutcome | Pending)[] = [];
    const accepted: Pending[] = [];
    for (const p of batch) {
      const { run } = p;
      const key = run.idempotencyKey === null ? null : keyOf(run.triggerId, run.idempotencyKey);
      const holder = key === null ? undefined : earlier.get(key);
      if (holder) {
        outcomes.push({ kind: 'repeat', earlier: holder });
        continue;
      }
      if (run.credits > 0) {
        const balance = balances.get(run.accountId);
        if (balance === undefined || balance < run.credits) {
          outcomes.push({ kind: 'refused', funded: balance !== undefined });
          continue;
        }
        balances.set(run.accountId, balance - run.credits);
      }
      if (key !== null) earlier.set(key, { id: run.id, requestHash: run.requestHash });
      accepted.push(p);
      outcomes.push(p);
    }
    if (accepted.length === 0) return outcomes as AcceptOutcome[];

    const inserted = await this.insertAndDebit(accepted, tx);
    const lost = accepted.filter((p) => !inserted.has(p.run.id));
    const repeats = lost.length > 0 ? await this.findKeys(lost, tx) : new Map<string, KeyHolder>();
    return outcomes.map((o): AcceptOutcome => {
      if (!('run' in o)) return o;
      if (inserted.has(o.run.id)) return { kind: 'accepted' };
      const holder = repeats.get(keyOf(o.run.triggerId, o.run.idempotencyKey!));
      if (!holder) throw new Error(`Run ${o.run.id} was not stored and no run holds its idempotency key`);
      return { kind: 'repeat', earlier: holder };
    });
  }

  /** Locks the rows of the accounts this batch charges and reads their balances (a missing row: never opened). */
  private async lockAccounts(batch: Pending[], tx: WebhookTransaction): Promise<Map<string, number>> {
    const ids = [...new Set(batch.filter((p) => p.run.credits > 0).map((p) => p.run.accountId))];
    const balances = new Map<string, number>();
    if (ids.length === 0) return balances;
    const { rows } = await this.db.read(
      `SELECT id, credits FROM webhook_accounts WHERE id = ANY(?::text[]) ORDER BY id FOR UPDATE`,
      [ids.sort()],
      tx,
    );
    for (const row of rows) balances.set(text(row.id), Number(row.credits));
    return balances;
  }

  /**
   * The runs holding this batch's idempotency keys within their time to live. Keys used before it are
   * freed (the unique index would refuse them), as one statement for the batch, and only when there are.
   */
  private async findKeys(batch: Pending[], tx: WebhookTransaction): Promise<Map<string, KeyHolder>> {
    const found = new Map<string, KeyHolder>();
    const keyed = batch.filter((p) => p.run.idempotencyKey !== null);
    if (keyed.length === 0) return found;
    const { rows } = await this.db.read(
      `SELECT i.id, i.trigger_id, i.idempotency_key, i.request_hash, i.created_at FROM webhook_invocations i ` +
        `JOIN unnest(?::text[], ?::text[]) AS k(trigger_id, idempotency_key) ` +
        `ON i.trigger_id = k.trigger_id AND i.idempotency_key = k.idempotency_key`,
      [keyed.map((p) => p.run.triggerId), keyed.map((p) => p.run.idempotencyKey)],
      tx,
    );
    if (rows.length === 0) return found;
    const since = new Map(keyed.map((p) => [keyOf(p.run.triggerId, p.run.idempotencyKey!), p.since]));
    const expired: string[] = [];
    for (const row of rows) {
      const key = keyOf(text(row.trigger_id), text(row.idempotency_key));
      if (Number(row.created_at) >= since.get(key)!) {
        found.set(key, { id: text(row.id), requestHash: row.request_hash === null ? null : text(row.request_hash) });
      } else {
        expired.push(text(row.id));
      }
    }
    if (expired.length > 0) {
      await this.db.write(`UPDATE webhook_invocations SET idempotency_key = NULL WHERE id = ANY(?::text[])`, [expired], tx);
    }
    return found;
  }

  /** One multi-row INSERT and one debit per account of what it stored; answers the ids stored. */
  private async insertAndDebit(accepted: Pending[], tx: WebhookTransaction): Promise<Set<string>> {
    const runs = accepted.map((p) => p.run);
    const { rows } = await this.db.write(INSERT_AND_DEBIT, columnsOf(accepted, this.clock.now()), tx);
    const inserted = new Set(rows.map((row) => text(row.id)));
    // The rows are locked and every amount was checked against them: a short debit is a bug, and rolls back.
    const charged = new Set(runs.filter((r) => r.credits > 0 && inserted.has(r.id)).map((r) => r.accountId));
    const debited = rows.length > 0 ? Number(rows[0].debited) : 0;
    if (debited !== charged.size) throw new Error(`Debited ${debited} of ${charged.size} locked accounts`);
    return inserted;
  }
}
