/**
 * A run's life in one process: run slots (maxConcurrentRuns, first come first served), time limits (a bot's
 * own or botTimeoutMs, freeing the slot even when the bot ignores its signal), history retention, what a
 * restart on the same database keeps, queued runs recovered at startup, and leases (recovery never takes a
 * run whose owner still renews its lease). Shutdown and crashes of a real process: test/process/.
 */
import type { INestApplication } from '@nestjs/common';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'node:http';
import { BotRunner, WEBHOOK_EVENTS, WebhookBot, WebhookBotHost, WebhookTriggersAdmin, type BotOutput } from '../../src/index.js';
import { HistoryRetention } from '../../src/lifecycle/history-retention.js';
import { LeaseRecovery } from '../../src/lifecycle/lease-recovery.js';
import { InvocationExecutor } from '../../src/runs/invocation.executor.js';
import { deferred } from '../fakes/webhook-fakes.js';
import { botMeter, EchoBot, METERED_BOTS, SlowBot } from '../fixtures/bots.js';
import { botLog, LIFECYCLE_BOTS } from '../fixtures/lifecycle-bots.js';
import { leasedRows, rowOf, storedCredits, storedInvocations, untilStored, writeDb, type InvocationRow } from '../helpers/db.js';
import { captureEvents, eventsOf, historyEntry, type CapturedEvent } from '../helpers/events.js';
import {
  CANCELLED_ERROR,
  ISO,
  TIMEOUT_ERROR,
  cancelRun,
  eventually,
  expectError,
  getStatus,
  rawAnswerOf,
  triggerOnAgent,
  sleep,
  startRun,
  syncInvocation,
  syncUntilFinished,
  triggerBot,
  until,
} from '../helpers/http.js';
import {
  UNTHROTTLED,
  createTrigger,
  describeOnEveryAdapter,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  triggerOn,
  type ScratchStore,
  type TestTrigger,
  type WebhookTestApp,
  LIFECYCLE_APP,
  ONE_RUN_SLOT_APP,
  TIGHT_LIMITS_APP,
  describeApp,
} from '../helpers/webhook-app.js';

const ACCOUNT = 'acct';
const DAY_MS = 24 * 60 * 60 * 1000;

describeOnEveryAdapterAndDatabase('lifecycle', ({ makeAdapter, database }) => {
  const databaseName = database.name;
  describe('with maxBodyBytes 1024, syncTimeoutMs 300 and maxConcurrentRuns 2', () => {
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        database,
        options: { rateLimits: UNTHROTTLED, maxBodyBytes: 1024, syncTimeoutMs: 300, maxConcurrentRuns: 2 },
        events: true,
        providers: METERED_BOTS,
      });
      events = captureEvents(t);
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    it('runs at most maxConcurrentRuns bots at once (counted inside main()) and finishes them all', async () => {
      const metered = await createTrigger(t, 'metered', 'concurrency');
      botMeter.reset();
      const t0 = performance.now();
      const ids = await Promise.all(Array.from({ length: 4 }, (_, i) => startRun(metered, { ms: 400, i })));
      // Right after accepting, two run and two wait.
      const statuses = await Promise.all(ids.map(async (id) => (await historyEntry(t, 'metered', id))!.status));
      expect(statuses.filter((s) => s === 'running').length).toBeLessThanOrEqual(2);
      expect(statuses.filter((s) => s === 'queued').length).toBeGreaterThanOrEqual(2);

      const results = await Promise.all(ids.map((id) => syncUntilFinished(metered, id)));
      const elapsed = performance.now() - t0;
      expect(results.map((r) => r.body?.success)).toEqual([true, true, true, true]);
      expect(botMeter.peak()).toBe(2);
      expect(elapsed).toBeGreaterThanOrEqual(780); // two waves of 400 ms
      const mine = events.filter((e) => e.payload.triggerId === metered.id && e.name === WEBHOOK_EVENTS.succeeded);
      expect(mine).toHaveLength(4);
    });

    it('stores a run accepted while a slot is free as running for this process in the accept itself (no claim): running when the 200 arrives', async () => {
      const metered = await createTrigger(t, 'metered', 'accepted as running');
      const id = await startRun(metered, { ms: 300 });
      const [row] = (await storedInvocations(t.store, metered.id)) as Array<InvocationRow & { owner: string | null; attempts: number }>;
      expect(row).toMatchObject({ id, status: 'running', attempts: 1, owner: t.app.get(InvocationExecutor).owner });
      expect(row.started_at).toBe(row.created_at);
      expect((await syncUntilFinished(metered, id)).body?.success).toBe(true);
    });
  });

  describe(`across a restart on the same ${databaseName === 'sqlite' ? 'SQLite file' : 'PostgreSQL database'}`, () => {
    let db: ScratchStore;
    beforeAll(async () => {
      db = await database.create();
    });
    afterAll(() => db?.drop());

    it('keeps triggers, keys, credits and finished runs; a trigger whose bot is gone answers 404 and charges nothing', async () => {
      const { store } = db;
      const first = await startWebhookApp(makeAdapter, { store });
      let echo: TestTrigger;
      let fail: TestTrigger;
      let id: string;
      try {
        await first.admin.setCredits(ACCOUNT, 10);
        echo = await createTrigger(first, 'echo');
        fail = await createTrigger(first, 'fail');
        id = await startRun(echo, { kept: 'yes' });
        expect((await syncInvocation(echo, id)).status).toBe(200);
      } finally {
        await first.close();
      }

      // The same database, opened by an app that no longer has the fail bot.
      const second = await startWebhookApp(makeAdapter, { store, onlyProviders: true, providers: [EchoBot] });
      try {
        const echoAgain = triggerOn(second, echo);
        expect((await syncInvocation(echoAgain, id)).body).toEqual({ success: true, outputs: [{ title: 'kept', message: 'yes' }] });
        expect(await second.admin.getCredits(ACCOUNT)).toEqual({ id: ACCOUNT, credits: 9 });
        const next = await startRun(echoAgain, { again: 'yes' });
        expect((await syncInvocation(echoAgain, next)).body.outputs).toEqual([{ title: 'again', message: 'yes' }]);
        expectError(await triggerBot(echoAgain, {}, { key: fail.key }), 401);

        const orphan = await triggerBot(triggerOn(second, fail), { a: 1 });
        expectError(orphan, 404);
        expect(orphan.body.message).toMatch(/"fail" is not registered/);
        expect(await storedInvocations(store, fail.id)).toHaveLength(0);
        expect(await storedCredits(store, ACCOUNT)).toBe(8);
      } finally {
        await second.close();
      }
    });
  });
});

describeOnEveryAdapter('lifecycle', ({ makeAdapter }) => {
  describe('with the lifecycle app (64 run slots, a 1 s idempotency TTL)', () => {
    const shared = describeApp({ makeAdapter }, LIFECYCLE_APP, { account: ACCOUNT });
    let t: WebhookTestApp;
    beforeAll(() => (t = shared.app));

    it('stops a bot at its own timeoutMs: the run ends timed_out with code timeout', async () => {
      const limited = await createTrigger(t, 'limited', 'time limit');
      const id = await startRun(limited, { ms: 2000 });
      const sync = await syncInvocation(limited, id);
      expect(sync.status).toBe(200);
      expect(sync.body).toEqual({ success: false, status: 'timed_out', outputs: [], error: TIMEOUT_ERROR(200) });
      expect(sync.elapsedMs).toBeGreaterThanOrEqual(150);
      expect(sync.elapsedMs).toBeLessThan(1500);
      const entry = (await historyEntry(t, 'limited', id))!;
      const ranMs = entry.finishedAt!.getTime() - entry.startedAt!.getTime();
      expect(ranMs).toBeGreaterThanOrEqual(195);
      expect(ranMs).toBeLessThan(1000);
    });
  });

  describe('with maxConcurrentRuns 1 and syncTimeoutMs 500', () => {
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    let occupier: TestTrigger;
    let quick: TestTrigger;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, ONE_RUN_SLOT_APP);
      events = captureEvents(t);
      occupier = await createTrigger(t, 'abortable', 'occupier');
      quick = await createTrigger(t, 'quick', 'behind it');
    });
    afterAll(() => t.close());
    beforeEach(() => t.admin.setCredits(ACCOUNT, 1000));

    it('frees the slot of a bot that ignores its signal at its time limit: the run behind it starts soon after', async () => {
      const stubborn = await createTrigger(t, 'stubborn', 'ignores signal');
      const t0 = performance.now();
      const ignoring = await startRun(stubborn, { ms: 4000 });
      const behind = await startRun(quick, { behind: 'stubborn' });
      expect((await getStatus(quick, behind)).body.invocation.status).toBe('queued');

      const res = await syncUntilFinished(quick, behind);
      const elapsed = performance.now() - t0;
      expect(res.body).toEqual({ success: true, outputs: [{ title: 'quick', message: '{"behind":"stubborn"}' }] });
      expect(elapsed).toBeGreaterThanOrEqual(190);
      expect(elapsed).toBeLessThan(1500); // not after the ignoring bot's own 4 s

      const stubbornStart = botLog.started.find((s) => s.invocationId === ignoring)!;
      const signal = botLog.signals.find((s) => s.invocationId === ignoring)!;
      const behindStart = botLog.started.find((s) => s.invocationId === behind)!;
      expect(signal).toMatchObject({ bot: 'stubborn', aborted: true });
      expect((signal.reason as Error).message).toBe(TIMEOUT_ERROR(200).message);
      expect(signal.at - stubbornStart.at).toBeGreaterThanOrEqual(190);
      expect(behindStart.at).toBeGreaterThanOrEqual(signal.at);
      expect(behindStart.at - signal.at).toBeLessThan(500);
      expect(botLog.stubbornFinished).not.toContain(ignoring); // it is still sleeping, ignoring its signal

      const status = await getStatus(stubborn, ignoring);
      expect(status.body).toEqual({
        success: false,
        invocation: { id: ignoring, status: 'timed_out', createdAt: ISO, startedAt: ISO, finishedAt: ISO },
        outputs: [],
        error: TIMEOUT_ERROR(200),
      });
      const ranMs = Date.parse(status.body.invocation.finishedAt) - Date.parse(status.body.invocation.startedAt);
      expect(ranMs).toBeGreaterThanOrEqual(195);
      expect(ranMs).toBeLessThan(1000);
      const timedOut = eventsOf(events, ignoring).find((e) => e.name === WEBHOOK_EVENTS.timed_out)!;
      expect(timedOut.payload.durationMs).toBe(ranMs);
    });

    it('frees the slot at once when a bot that ignores its signal is cancelled, and does not time it out later', async () => {
      const stubborn = await createTrigger(t, 'stubborn', 'cancelled while ignoring');
      const ignoring = await startRun(stubborn, { ms: 4000 });
      const behind = await startRun(quick, { behind: 'cancelled stubborn' });
      await untilStored(t, stubborn, ignoring, 'running');
      expect((await cancelRun(stubborn, ignoring)).body.invocation.status).toBe('cancelled'); // so within its 200 ms limit
      const res = await syncUntilFinished(quick, behind);
      expect(res.body.success).toBe(true);
      const signal = botLog.signals.find((s) => s.invocationId === ignoring)!;
      expect((signal.reason as Error).message).toBe(CANCELLED_ERROR.message);
      const behindStart = botLog.started.find((s) => s.invocationId === behind)!;
      expect(behindStart.at).toBeGreaterThanOrEqual(signal.at);
      expect(behindStart.at - signal.at).toBeLessThan(150); // freed by the cancel, not by the time limit or the bot's 4 s
      // A run of the same bot started after it times out at its own 200 ms limit, later than the cancelled
      // run's limit would have: by then a time-out of the cancelled run would have been stored.
      const later = await startRun(stubborn, { ms: 250 });
      expect((await syncUntilFinished(stubborn, later)).body).toMatchObject({ success: false, status: 'timed_out' });
      expect(eventsOf(events, ignoring).map((e) => e.name)).toEqual([
        WEBHOOK_EVENTS.queued,
        WEBHOOK_EVENTS.started,
        WEBHOOK_EVENTS.cancelled,
      ]);
      expect(rowOf(t, stubborn, ignoring)!.status).toBe('cancelled');
      expect(botLog.stubbornFinished).not.toContain(ignoring);
    });

    it('counts a bot’s time limit from its start, not from when it was queued', async () => {
      const limited = await createTrigger(t, 'limited', 'queued first');
      const busy = await startRun(occupier, { ms: 400 });
      const waited = await startRun(limited, { ms: 100 }); // 100 ms of work, 200 ms limit, ~400 ms in the queue
      const res = await syncUntilFinished(limited, waited);
      expect(res.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '100' }] });
      const entry = (await historyEntry(t, 'limited', waited))!;
      expect(entry.startedAt!.getTime() - entry.createdAt.getTime()).toBeGreaterThanOrEqual(300);
      expect((await syncUntilFinished(occupier, busy)).body.success).toBe(true);
    });

    it('deletes finished runs older than historyRetentionDays (30) when the retention job sweeps, and keeps queued and recent ones', async () => {
      const echo = await createTrigger(t, 'echo', 'retention');
      const fail = await createTrigger(t, 'fail', 'retention');
      const limited = await createTrigger(t, 'limited', 'retention');
      const finished: Array<[TestTrigger, string]> = [
        [echo, await startRun(echo, { old: 1 })],
        [fail, await startRun(fail, { message: 'old' })],
        [limited, await startRun(limited, { ms: 2000 })],
      ];
      for (const [trigger, id] of finished) await syncUntilFinished(trigger, id);
      const oldCancelled = await startRun(occupier, { ms: 3000 });
      await cancelRun(occupier, oldCancelled);
      finished.push([occupier, oldCancelled]);
      const recent = await startRun(echo, { recent: 1 });
      const borderline = await startRun(echo, { days: 29 });
      await syncUntilFinished(echo, recent);
      await syncUntilFinished(echo, borderline);
      // A run that waits for the slot, accepted long ago (its process died, say): never deleted.
      const busy = await startRun(occupier, { ms: 3000 });
      const stillQueued = await startRun(quick, { old: 'queued' });
      expect(rowOf(t, quick, stillQueued)!.status).toBe('queued');

      const now = Date.now();
      const old = now - 31 * DAY_MS;
      for (const [, id] of finished)
        expect(writeDb(t.dbFile, 'UPDATE webhook_invocations SET created_at = ? WHERE id = ?', old, id)).toBe(1);
      writeDb(t.dbFile, 'UPDATE webhook_invocations SET created_at = ? WHERE id = ?', old, stillQueued);
      writeDb(t.dbFile, 'UPDATE webhook_invocations SET created_at = ? WHERE id = ?', now - 29 * DAY_MS, borderline);
      expect(finished.map(([trigger, id]) => rowOf(t, trigger, id)!.status).sort()).toEqual([
        'cancelled',
        'failed',
        'succeeded',
        'timed_out',
      ]);

      expect(await t.app.get(HistoryRetention).sweep()).toBe(4);
      for (const [trigger, id] of finished) {
        expectError(await getStatus(trigger, id), 404);
        expect(rowOf(t, trigger, id)).toBeUndefined();
        expect(await historyEntry(t, trigger.botId, id)).toBeUndefined();
      }
      expect((await getStatus(echo, recent)).body.invocation.status).toBe('succeeded');
      expect((await getStatus(echo, borderline)).body.invocation.status).toBe('succeeded');
      expect((await getStatus(quick, stillQueued)).body.invocation.status).toBe('queued');

      // The old queued run still runs once the slot frees.
      await cancelRun(occupier, busy);
      expect((await syncUntilFinished(quick, stillQueued)).body.success).toBe(true);
    });
  });

  describe('with maxConcurrentRuns 2 and botTimeoutMs 500', () => {
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 2, botTimeoutMs: 500, shutdownGraceMs: 200 },
        events: true,
        providers: LIFECYCLE_BOTS,
      });
      events = captureEvents(t);
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    it('runs at most 2 at once; the others wait as queued and start in the order they came', async () => {
      const slow = await createTrigger(t, 'abortable', 'bounded');
      const t0 = performance.now();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(await startRun(slow, { ms: 250, i }));
      const statuses = await Promise.all(ids.map(async (id) => (await getStatus(slow, id)).body.invocation.status as string));
      expect(statuses.filter((s) => s === 'running').length).toBeLessThanOrEqual(2);
      expect(statuses.slice(2)).toEqual(['queued', 'queued', 'queued']);

      const results = await Promise.all(ids.map((id) => syncInvocation(slow, id)));
      expect(results.map((r) => r.body.success)).toEqual([true, true, true, true, true]);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(700); // three waves of 250 ms

      const started = events
        .filter((e) => e.name === WEBHOOK_EVENTS.started && e.payload.triggerId === slow.id)
        .map((e) => e.payload.invocationId);
      expect(started).toEqual(ids);
      // Each run started once its predecessor-but-one had ended: never more than 2 bots executing at once.
      const startedAt = ids.map((id) => botLog.started.find((s) => s.invocationId === id)!.at);
      for (let i = 2; i < ids.length; i++) expect(startedAt[i] - startedAt[i - 2]).toBeGreaterThanOrEqual(240);
    });

    it('applies the module-wide botTimeoutMs to bots that set no timeoutMs, and a bot’s own timeoutMs over it', async () => {
      const slow = await createTrigger(t, 'slow', 'module limit');
      const limited = await createTrigger(t, 'limited', 'own limit');
      const slowId = await startRun(slow, { ms: 5000 });
      const limitedId = await startRun(limited, { ms: 5000 });
      const slowSync = await syncInvocation(slow, slowId);
      expect(slowSync.body).toEqual({ success: false, status: 'timed_out', outputs: [], error: TIMEOUT_ERROR(500) });
      expect(slowSync.elapsedMs).toBeGreaterThanOrEqual(450);
      expect(slowSync.elapsedMs).toBeLessThan(2000);
      expect((await syncInvocation(limited, limitedId)).body).toEqual({
        success: false,
        status: 'timed_out',
        outputs: [],
        error: TIMEOUT_ERROR(200),
      });
      const slowEnd = eventsOf(events, slowId).find((e) => e.name === WEBHOOK_EVENTS.timed_out)!;
      expect(slowEnd.payload.durationMs).toBeGreaterThanOrEqual(495);
      expect(slowEnd.payload.durationMs).toBeLessThan(1500);
    });
  });

  describe('with failedKeyLimit 3 per minute, 4 requests per trigger per minute and historyRetentionDays 0', () => {
    const shared = describeApp({ makeAdapter }, TIGHT_LIMITS_APP, { account: ACCOUNT });
    let t: WebhookTestApp;
    beforeAll(() => (t = shared.app));

    it('keeps every run when historyRetentionDays is 0', async () => {
      const echo = await createTrigger(t, 'echo', 'kept forever');
      const id = await startRun(echo, { keep: 1 });
      await syncInvocation(echo, id);
      writeDb(t.dbFile, 'UPDATE webhook_invocations SET created_at = ? WHERE id = ?', Date.now() - 10_000 * DAY_MS, id);
      expect(await t.app.get(HistoryRetention).sweep()).toBe(0);
      expect(rowOf(t, echo, id)?.status).toBe('succeeded');
      expect((await getStatus(echo, id)).body.invocation.status).toBe('succeeded');
    });
  });
});

describeOnEveryAdapter('shutdown with a kept-alive caller', ({ makeAdapter }) => {
  it("closes the connection of a trigger answered once shutdown began, so the caller's kept-alive connection does not hold app.close() for the server's keep-alive timeout", async () => {
    const t = await startWebhookApp(makeAdapter, { options: { shutdownGraceMs: 200 } });
    let closed: Promise<void> | undefined;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      await t.admin.setCredits(ACCOUNT, 10);
      const echo = await createTrigger(t, 'echo');
      const post = () => triggerOnAgent(agent, echo, 7);
      const first = post();
      const firstAnswer = rawAnswerOf(first);
      first.end('{"a":1}');
      expect(await firstAnswer).toMatchObject({ status: 200, connection: 'keep-alive' });
      // Its body still arriving when the app begins to close: in flight as the HTTP server closes (Node's
      // server.close() ends only idle connections).
      const late = post();
      const lateAnswer = rawAnswerOf(late);
      late.write('{"a":');
      await sleep(100);
      const closeAt = Date.now();
      closed = t.close();
      await sleep(300);
      late.end('2}');
      const answer = await lateAnswer;
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body)).toMatchObject({ success: false, statusCode: 503 });
      expect(answer.connection).toBe('close');
      await closed;
      // Kept alive, the connection held the close until the server's keep-alive timeout (6.3 s measured on Express, 73 s on Fastify).
      expect(Date.now() - closeAt).toBeLessThan(2_000);
    } finally {
      agent.destroy();
      await (closed ?? t.close());
    }
  });
});

describe('runs accepted but not started when the app stopped', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'webhook-recovery-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** One slot and no grace, on the given file (kept on close, so the next start opens it again). */
  const start = async (file: string): Promise<INestApplication> =>
    (
      await startWebhookApp(() => undefined, {
        dbFile: file,
        options: { maxConcurrentRuns: 1, shutdownGraceMs: 0 },
        onlyProviders: true,
        providers: [SlowBot],
      })
    ).app;

  it('are run by the next start on the same database, charged once', async () => {
    const file = join(dir, 'recovery.sqlite');
    const first = await start(file);
    const admin1 = first.get(WebhookTriggersAdmin);
    await admin1.setCredits('acct', 10);
    const trigger = await admin1.createTrigger('slow', { name: 'backlog' });
    const url1 = await first.getUrl();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url1}/webhooks/${trigger.id}/trigger`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-key': trigger.key },
        body: JSON.stringify({ ms: 1500 }),
      });
      expect(res.status).toBe(200);
      ids.push(((await res.json()) as { invocation: { id: string } }).invocation.id);
    }
    // One slot: the first run is in flight, two wait. Stop now.
    await first.close();

    const second = await start(file);
    try {
      const admin2 = second.get(WebhookTriggersAdmin);
      const url2 = await second.getUrl();
      const before = await admin2.listInvocations('slow');
      expect(before.find((i) => i.id === ids[0])).toMatchObject({ status: 'failed', error: { code: 'interrupted' } }); // no grace: aborted by the shutdown
      const sync = await fetch(`${url2}/webhooks/${trigger.id}/trigger/invocation/${ids[1]}/sync`, { headers: { 'x-key': trigger.key } });
      expect(sync.status).toBe(200);
      expect(await sync.json()).toEqual({ success: true, outputs: [{ title: 'slept', message: '1500' }] });
      expect(await admin2.getCredits('acct')).toEqual({ id: 'acct', credits: 7 });
    } finally {
      await second.close();
    }
  }, 30_000);
});

// ---------------------------------------------------------------------------------------------------------
// The lease rule, through the module on a real SQLite file

@WebhookBot({ id: 'lease-plain', accountId: 'acct', credits: 0 })
class LeasePlainBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [{ title: 'ran', message: 'plain' }];
  }
}

@WebhookBot({ id: 'lease-long', accountId: 'acct', credits: 0 })
class LeaseLongBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    await sleep(1000);
    return [{ title: 'ran', message: 'long' }];
  }
}

/** Released by the test that holds it: a run kept in flight as long as a test needs. */
let releaseHold = deferred();

@WebhookBot({ id: 'lease-hold', accountId: 'acct', credits: 0 })
class LeaseHoldBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    await releaseHold.promise;
    return [{ title: 'ran', message: 'held' }];
  }
}

@WebhookBot({ id: 'lease-retry', accountId: 'acct', credits: 0, retryInterrupted: true })
class LeaseRetryBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [{ title: 'ran', message: 'again' }];
  }
}

describe('recovery respects leases (repository level, real SQLite)', () => {
  let t: WebhookTestApp;
  let app: INestApplication;
  let file: string;
  let recovery: LeaseRecovery;
  let n = 0;

  beforeAll(async () => {
    t = await startWebhookApp(() => undefined, {
      options: { runLeaseMs: 300 },
      onlyProviders: true,
      providers: [LeasePlainBot, LeaseRetryBot, LeaseLongBot, LeaseHoldBot],
    });
    app = t.app;
    file = t.dbFile;
    recovery = app.get(LeaseRecovery);
  });

  afterAll(async () => {
    await t?.close();
  });

  /**
   * Writes straight into the file on a second connection. The module's connection lives in this same
   * process and commits on the next event-loop turn, so a busy database is retried asynchronously
   * (a blocking busy-wait here would stop that commit from ever happening).
   */
  async function writeDirect(sql: string, ...params: unknown[]): Promise<void> {
    const deadline = Date.now() + 3_000;
    for (;;) {
      const db = new Database(file, { timeout: 0 });
      try {
        db.prepare(sql).run(...params);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw error;
      } finally {
        db.close();
      }
      await sleep(5);
    }
  }

  /** A run another process claimed: `running`, its owner, its lease. */
  async function insertRunning(botId: string, leaseExpiresAt: number): Promise<string> {
    const id = `inv_lease${String(++n).padStart(4, '0')}xxxxxxxxxxxxx`;
    const now = Date.now();
    await writeDirect(
      `INSERT INTO webhook_invocations (id, trigger_id, bot_id, account_id, status, inputs, outputs, error, credits, idempotency_key, request_hash, created_at, started_at, finished_at, owner, lease_expires_at)
       VALUES (?, 'trg_other', ?, 'acct', 'running', '{}', NULL, NULL, 1, NULL, NULL, ?, ?, NULL, 'other-host:4242:deadbeef', ?)`,
      id,
      botId,
      now - 1000,
      now - 1000,
      leaseExpiresAt,
    );
    return id;
  }

  const setLease = (id: string, leaseExpiresAt: number) =>
    writeDirect('UPDATE webhook_invocations SET lease_expires_at = ? WHERE id = ?', leaseExpiresAt, id);

  const row = (id: string) => leasedRows(file).find((r) => r.id === id)!;

  it('leaves a run alone while its owner holds a fresh lease, also across background sweeps', async () => {
    const future = Date.now() + 60_000;
    const plain = await insertRunning('lease-plain', future);
    const retry = await insertRunning('lease-retry', future);
    expect(await recovery.recoverExpired()).toBe(0);
    // Five background sweeps (every runLeaseMs / 3 = 100 ms) run to their end, each counted as it ends.
    const recoverExpired = recovery.recoverExpired.bind(recovery);
    let sweeps = 0;
    const counted = jest.spyOn(recovery, 'recoverExpired').mockImplementation(async () => {
      const recovered = await recoverExpired();
      sweeps++;
      return recovered;
    });
    try {
      await until(() => sweeps >= 5, 3_000, 'five background sweeps');
    } finally {
      counted.mockRestore();
    }
    expect(await recovery.recoverExpired()).toBe(0);
    for (const id of [plain, retry]) {
      expect(row(id)).toMatchObject({ status: 'running', owner: 'other-host:4242:deadbeef', lease_expires_at: future, finished_at: null });
    }
    // Once the owner stops renewing and the lease runs out, the background sweep recovers them.
    await setLease(plain, Date.now() - 1);
    await setLease(retry, Date.now() - 1);
    const failed = await eventually('the plain run to be failed', 1_000, () => (row(plain).status === 'failed' ? row(plain) : undefined));
    expect(JSON.parse(failed.error!)).toEqual({ code: 'interrupted', message: expect.any(String) });
    expect(failed.finished_at).toEqual(expect.any(Number));
    const again = await eventually('the retryInterrupted run to run again', 2_000, () =>
      row(retry).status === 'succeeded' ? row(retry) : undefined,
    );
    expect(JSON.parse(again.outputs!)).toEqual([{ title: 'ran', message: 'again' }]);
    expect(again.owner).toBe(app.get(InvocationExecutor).owner); // claimed again, by this process
  });

  it('recovers a run whose lease is past on an explicit recoverExpired(): failed, or requeued and run for retryInterrupted', async () => {
    const past = Date.now() - 5_000;
    const plain = await insertRunning('lease-plain', past);
    const retry = await insertRunning('lease-retry', past);
    const unknownBot = await insertRunning('no-such-bot', past);
    const recovered = await recovery.recoverExpired();
    // The background sweep may have taken some first; together every one was recovered exactly once.
    expect(recovered).toBeLessThanOrEqual(3);
    await eventually('all three recovered', 2_000, () =>
      [plain, retry, unknownBot].every((id) => row(id).status !== 'running') ? true : undefined,
    );
    for (const id of [plain, unknownBot]) {
      expect(row(id).status).toBe('failed');
      expect(JSON.parse(row(id).error!)).toMatchObject({ code: 'interrupted' });
    }
    const again = await eventually('the retried run to finish', 2_000, () => (row(retry).status === 'succeeded' ? row(retry) : undefined));
    expect(again.started_at!).toBeGreaterThan(past);
    expect(await recovery.recoverExpired()).toBe(0);
  });

  /** A run queued by another process, dispatched here. */
  async function dispatchQueued(botId: string): Promise<string> {
    const id = `inv_lease${String(++n).padStart(4, '0')}xxxxxxxxxxxxx`;
    await writeDirect(
      `INSERT INTO webhook_invocations (id, trigger_id, bot_id, account_id, status, inputs, outputs, error, credits, idempotency_key, request_hash, created_at, started_at, finished_at, owner, lease_expires_at)
       VALUES (?, 'trg_other', ?, 'acct', 'queued', '{}', NULL, NULL, 0, NULL, NULL, ?, NULL, NULL, NULL, NULL)`,
      id,
      botId,
      Date.now(),
    );
    await app.get(BotRunner).dispatch({ id, accountId: 'acct' });
    return id;
  }

  it('a live owner renews its lease, so its run is never recovered while it runs longer than the lease', async () => {
    const id = await dispatchQueued('lease-long');
    const leases = new Set<number>();
    // 1000 ms in main() with a 300 ms lease: only renewal (every 100 ms) keeps it from being recovered.
    const done = await eventually('the long run to finish', 3_000, () => {
      const r = row(id);
      if (r.status === 'running') leases.add(r.lease_expires_at!);
      return r.status === 'running' || r.status === 'queued' ? undefined : r;
    });
    expect(done.status).toBe('succeeded');
    expect(done.owner).toBe(app.get(InvocationExecutor).owner);
    expect(leases.size).toBeGreaterThanOrEqual(3); // renewed while it ran
  });

  it('a run whose outcome could not be stored is not renewed with the runs still in flight: it expires and is recovered while they run', async () => {
    // The database refuses this bot's success (a trigger raising, as a full disk or a broken constraint would):
    // the run stays `running` under this live process, which no longer runs it.
    await writeDirect(
      `CREATE TRIGGER refuse_plain_success BEFORE UPDATE OF status ON webhook_invocations ` +
        `WHEN NEW.bot_id = 'lease-plain' AND NEW.status = 'succeeded' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`,
    );
    releaseHold = deferred();
    const owner = app.get(InvocationExecutor).owner;
    try {
      const held = await dispatchQueued('lease-hold');
      await eventually('the held run to start', 2_000, () => (row(held).status === 'running' ? true : undefined));
      const lost = await dispatchQueued('lease-plain');
      // Renewals every 100 ms for the held run; the lost run's 300 ms lease must still run out.
      const recovered = await eventually('the lost run to be recovered', 3_000, () =>
        row(lost).status === 'failed' ? row(lost) : undefined,
      );
      expect(JSON.parse(recovered.error!)).toEqual({ code: 'interrupted', message: expect.any(String) });
      expect(row(held)).toMatchObject({ status: 'running', owner });
      expect(row(held).lease_expires_at!).toBeGreaterThan(Date.now());
    } finally {
      releaseHold.resolve();
      await writeDirect('DROP TRIGGER IF EXISTS refuse_plain_success');
    }
  });
});
