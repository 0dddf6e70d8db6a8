/**
 * A run's live event stream (`GET …/invocation/{id}/events`): status, output and done events numbered per
 * run, resumed exactly with Last-Event-ID or ?after=, a finished run replayed at once, refusals (401, 404,
 * 429, 400, 503) decided before anything streams, the per-process bound, and shutdown ending streams fast.
 */
import type { LoggerService } from '@nestjs/common';
import { RunEventStreams } from '../../src/http/run-event-streams.js';
import { InvocationChanges } from '../../src/invocations/invocation-changes.js';
import { DEFAULTS } from '../../src/options/defaults.js';
import { EmitBot, OtherEchoBot, OtherSlowBot } from '../fixtures/bots.js';
import { openRunStream, type RunStreamEvent } from '../helpers/event-stream.js';
import { cancelRun, eventually, sleep, startRun, syncInvocation, syncUntilFinished } from '../helpers/http.js';
import {
  UNTHROTTLED,
  createTrigger,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  type TestTrigger,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';

const step = (i: number) => ({ title: `step ${i}`, message: String(i) });
const MAX_STREAMS = 3;

/** The whole history of a successful `emit` run of `n` steps, as the stream numbers it. */
function history(n: number, done: unknown): RunStreamEvent[] {
  const outputs = [...Array.from({ length: n }, (_v, i) => step(i + 1)), { title: 'returned', message: String(n) }];
  return [
    { id: 1, event: 'status', data: { status: 'queued' } },
    { id: 2, event: 'status', data: { status: 'running' } },
    ...outputs.map((data, i) => ({ id: 3 + i, event: 'output', data })),
    { id: 3 + outputs.length, event: 'status', data: { status: 'succeeded' } },
    { id: 4 + outputs.length, event: 'done', data: done },
  ];
}

describeOnEveryAdapterAndDatabase('run event stream', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;
  let emit: TestTrigger;
  let echo: TestTrigger;
  const errors: string[] = [];
  const logger: LoggerService = {
    log() {},
    warn: (m: unknown) => void errors.push(`warn ${String(m)}`),
    error: (m: unknown) => void errors.push(`error ${String(m)}`),
  };
  const eventsUrl = (tr: TestTrigger, id: string, query = '') => `${tr.url}/invocation/${id}/events${query}`;
  const open = (tr: TestTrigger, id: string, headers: Record<string, string> = {}, query = '') =>
    openRunStream(eventsUrl(tr, id, query), { 'x-key': tr.key, ...headers });

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      database,
      logger,
      providers: [EmitBot],
      options: { rateLimits: UNTHROTTLED, maxEventStreams: MAX_STREAMS, failedKeyLimit: { limit: 1000, ttlMs: 60_000 } },
    });
    emit = await createTrigger(t, 'emit');
    echo = await createTrigger(t, 'echo');
    await t.admin.setCredits('acct', 1000);
  });
  afterAll(() => t.close());
  afterEach(async () => {
    // Every stream of a test is gone when it ends: none left counted, no run still watched.
    await eventually('streams released', 2000, () => (t.app.get(RunEventStreams).count === 0 ? true : undefined));
    expect(t.app.get(InvocationChanges).watchedRuns).toBe(0);
  });

  it('streams status, each output as emitted, then done (the sync body) with ids 1, 2, 3… and closes', async () => {
    const id = await startRun(emit, { n: 3, ms: 100 });
    const stream = await open(emit, id);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    // The first output arrives while the run is still running, not all at the end.
    await stream.until((events) => events.some((e) => e.event === 'output'));
    expect(stream.events.some((e) => e.event === 'done')).toBe(false);
    await stream.ended;
    expect(stream.closedByServer).toBe(true);
    const sync = (await syncInvocation(emit, id)).body;
    expect(stream.events).toEqual(history(3, sync));
  });

  it('resumes with Last-Event-ID after a dropped connection: no event lost, none repeated', async () => {
    const id = await startRun(emit, { n: 4, ms: 150 });
    const first = await open(emit, id);
    await first.until((events) => events.some((e) => e.event === 'output'));
    first.close();
    const seen = [...first.events];
    const last = seen[seen.length - 1].id;
    await sleep(200); // the run goes on while nobody listens
    const second = await open(emit, id, { 'last-event-id': String(last) });
    await second.ended;
    expect(second.events[0].id).toBe(last + 1);
    expect([...seen, ...second.events]).toEqual(history(4, (await syncInvocation(emit, id)).body));
  });

  it('replays a finished run at once, whole, then done, and closes; ?after= resumes like Last-Event-ID', async () => {
    const id = await startRun(emit, { n: 2, ms: 0 });
    const sync = (await syncInvocation(emit, id)).body;
    const whole = await open(emit, id);
    await whole.ended;
    expect(whole.closedByServer).toBe(true);
    expect(whole.events).toEqual(history(2, sync));
    const rest = await open(emit, id, {}, '?after=4');
    await rest.ended;
    expect(rest.events).toEqual(history(2, sync).slice(4));
    // The header wins over the query (a browser reconnects to the same URL with a newer Last-Event-ID).
    const both = await open(emit, id, { 'last-event-id': '6' }, '?after=1');
    await both.ended;
    expect(both.events.map((e) => e.event)).toEqual(['done']);
    // Everything up to done already seen: 204, which also stops a browser's EventSource from reconnecting.
    const nothing = await open(emit, id, { 'last-event-id': '7' });
    expect(nothing.status).toBe(204);
  });

  it('streams a run that fails or is cancelled, with its own terminal status and done body', async () => {
    const id = await startRun(emit, { n: 50, ms: 100 });
    const stream = await open(emit, id);
    await stream.until((events) => events.some((e) => e.event === 'output'));
    const cancelled = await fetch(`${emit.url}/invocation/${id}/cancel`, { method: 'POST', headers: { 'x-key': emit.key } });
    expect(cancelled.status).toBe(200);
    await stream.ended;
    const events = stream.events;
    expect(events.slice(-2)).toEqual([
      { id: events.length - 1, event: 'status', data: { status: 'cancelled' } },
      { id: events.length, event: 'done', data: (await syncInvocation(emit, id)).body },
    ]);
    expect(events.map((e) => e.id)).toEqual(events.map((_e, i) => i + 1));
  });

  it('refuses before anything streams: 401 wrong or missing key, 404 unknown trigger, unknown or foreign invocation, 400 bad ids', async () => {
    const id = await startRun(echo, { a: 'b' });
    const refusals = [
      [await openRunStream(eventsUrl(emit, id), { 'x-key': 'whk_wrong' }), 401],
      [await openRunStream(eventsUrl(emit, id), {}), 401],
      [await openRunStream(`${t.baseUrl}/webhooks/trg_AAAAAAAAAAAAAAAA/trigger/invocation/${id}/events`, { 'x-key': emit.key }), 404],
      [await open(emit, 'inv_AAAAAAAAAAAAAAAAAAAAAA'), 404],
      [await open(emit, id), 404], // the run belongs to another trigger
      [await open(emit, 'not-an-id'), 404],
      [await open(echo, id, { 'last-event-id': 'abc' }), 400],
      [await open(echo, id, {}, '?after=-1'), 400],
    ] as const;
    for (const [res, status] of refusals) {
      expect({ status: res.status, type: res.headers.get('content-type') }).toEqual({
        status,
        type: expect.stringMatching(/^application\/json/),
      });
      expect(res.body).toMatchObject({ success: false, statusCode: status });
    }
  });

  it(`answers 503 beyond maxEventStreams (${MAX_STREAMS}) with Retry-After, and takes a stream again once one ends`, async () => {
    const ids = await Promise.all(Array.from({ length: MAX_STREAMS }, () => startRun(emit, { n: 100, ms: 100 })));
    const streams = await Promise.all(ids.map((id) => open(emit, id)));
    expect(streams.map((s) => s.status)).toEqual(ids.map(() => 200));
    const refused = await open(emit, ids[0]);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    streams[0].close();
    await eventually('a slot freed', 2000, () => (t.app.get(RunEventStreams).count < MAX_STREAMS ? true : undefined));
    const again = await open(emit, ids[0]);
    expect(again.status).toBe(200);
    again.close();
    for (const s of streams) s.close();
    for (const id of ids) await fetch(`${emit.url}/invocation/${id}/cancel`, { method: 'POST', headers: { 'x-key': emit.key } });
  });

  it('treats a client that drops as nothing to log', async () => {
    errors.length = 0;
    const id = await startRun(emit, { n: 5, ms: 50 });
    for (let i = 0; i < 5; i++) {
      const s = await open(emit, id);
      s.close();
    }
    await syncInvocation(emit, id);
    // A drop would be logged when its stream is let go: wait until every one was, then nothing was logged.
    await eventually('the dropped streams released', 2000, () => (t.app.get(RunEventStreams).count === 0 ? true : undefined));
    expect(errors).toEqual([]);
  });

  it('refuses with 429 over the rate limits like the status endpoint, before streaming', async () => {
    const limited = await startWebhookApp(makeAdapter, {
      database,
      providers: [EmitBot],
      options: { rateLimits: { perTrigger: { limit: 2, ttlMs: 60_000 }, perAccount: { limit: 1000, ttlMs: 60_000 } } },
    });
    try {
      const tr = await createTrigger(limited, 'emit');
      await limited.admin.setCredits('acct', 10);
      const id = await startRun(tr, { n: 1, ms: 0 }); // 1st request
      const ok = await open(tr, id); // 2nd
      await ok.ended;
      const refused = await open(tr, id); // 3rd
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await limited.close();
    }
  });

  it('ends open streams at once when the app shuts down, so close() is not held by them', async () => {
    const app = await startWebhookApp(makeAdapter, {
      database,
      providers: [EmitBot],
      options: { rateLimits: UNTHROTTLED, shutdownGraceMs: 0 },
    });
    let closed = false;
    try {
      const tr = await createTrigger(app, 'emit');
      await app.admin.setCredits('acct', 10);
      const id = await startRun(tr, { n: 1000, ms: 100 });
      const stream = await open(tr, id);
      await stream.until((events) => events.length >= 2);
      const started = Date.now();
      await app.close();
      closed = true;
      await stream.ended;
      expect(stream.closedByServer).toBe(true);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      if (!closed) await app.close();
    }
  });
});

describeOnEveryAdapterAndDatabase('run event stream shares', ({ makeAdapter, database }) => {
  jest.setTimeout(60_000);
  let t: WebhookTestApp;
  const eventsUrl = (tr: TestTrigger, id: string) => `${tr.url}/invocation/${id}/events`;
  const open = (tr: TestTrigger, id: string) => openRunStream(eventsUrl(tr, id), { 'x-key': tr.key });
  type Opened = Awaited<ReturnType<typeof open>>;

  beforeAll(async () => {
    // The stream bounds at their defaults: 1,000 per process, 100 per trigger, 250 per account.
    t = await startWebhookApp(makeAdapter, {
      database,
      providers: [OtherEchoBot, OtherSlowBot],
      options: { rateLimits: UNTHROTTLED, failedKeyLimit: { limit: 1000, ttlMs: 60_000 } },
    });
    await t.admin.setCredits('acct', 1000);
    await t.admin.setCredits('other', 1000);
  });
  afterAll(() => t.close());

  it("leaves other triggers' streams working while one key asks for 1,000 (live runs and finished ones)", async () => {
    const { maxEventStreams, maxEventStreamsPerTrigger, maxEventStreamsPerAccount } = DEFAULTS;
    const attacker = await createTrigger(t, 'slow', 'attacker');
    const running = await startRun(attacker, { ms: 30_000 });
    const finishedOfAttacker = await startRun(attacker, { ms: 1 });
    await syncUntilFinished(attacker, finishedOfAttacker);

    // One key asks for as many streams as the whole process may hold.
    const attempts = await Promise.all(Array.from({ length: maxEventStreams }, () => open(attacker, running)));
    const held = attempts.filter((s) => s.status === 200);
    const refused = attempts.filter((s) => s.status !== 200);
    expect(held).toHaveLength(maxEventStreamsPerTrigger);
    expect(refused).toHaveLength(maxEventStreams - maxEventStreamsPerTrigger);
    for (const s of refused) {
      expect(s.status).toBe(429);
      expect(s.headers.get('retry-after')).toBe('5');
      expect(s.body).toMatchObject({ success: false, statusCode: 429, message: expect.stringContaining('maxEventStreamsPerTrigger') });
    }
    // Its own finished run counts against the same share.
    expect((await open(attacker, finishedOfAttacker)).status).toBe(429);

    // Another account's trigger: a live run streams, and a finished run answers its whole history.
    const otherSlow = await createTrigger(t, 'other-slow', 'neighbour live');
    const otherLive = await startRun(otherSlow, { ms: 30_000 });
    const live = await open(otherSlow, otherLive);
    expect(live.status).toBe(200);
    await live.until((events) => events.some((e) => e.event === 'status'));
    const otherEcho = await createTrigger(t, 'other-echo', 'neighbour finished');
    const otherDone = await startRun(otherEcho, { a: 1 });
    await syncUntilFinished(otherEcho, otherDone);
    const replay = await open(otherEcho, otherDone);
    expect(replay.status).toBe(200);
    await replay.ended;
    expect(replay.events.at(-1)).toMatchObject({ event: 'done', data: { success: true } });

    // The same account's other triggers share its account cap: past it, 429 naming maxEventStreamsPerAccount.
    const more: Opened[] = [];
    for (let n = 0; more.length < maxEventStreamsPerAccount - maxEventStreamsPerTrigger; n++) {
      const trigger = await createTrigger(t, 'slow', `same account ${n}`);
      const run = await startRun(trigger, { ms: 30_000 });
      const room = Math.min(maxEventStreamsPerTrigger, maxEventStreamsPerAccount - maxEventStreamsPerTrigger - more.length);
      more.push(...(await Promise.all(Array.from({ length: room }, () => open(trigger, run)))));
      if (more.length === maxEventStreamsPerAccount - maxEventStreamsPerTrigger) {
        const over = await open(trigger, run);
        expect(over.status).toBe(429);
        expect(over.body).toMatchObject({ statusCode: 429, message: expect.stringContaining('maxEventStreamsPerAccount') });
        // Another account still streams.
        const stillLive = await open(otherSlow, otherLive);
        expect(stillLive.status).toBe(200);
        stillLive.close();
      }
      expect(more.every((s) => s.status === 200)).toBe(true);
    }

    // A stream given back is a slot the key holder has again.
    held[0].close();
    await eventually('a slot given back', 2000, async () => {
      const again = await open(attacker, running);
      if (again.status !== 200) return undefined;
      again.close();
      return true;
    });
    for (const s of [...held, ...more, live]) s.close();
    for (const [trigger, id] of [
      [attacker, running],
      [otherSlow, otherLive],
    ] as const)
      await cancelRun(trigger, id);
    await eventually('streams released', 5000, () => (t.app.get(RunEventStreams).count === 0 ? true : undefined));
  });
});
