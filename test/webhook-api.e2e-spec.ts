import { EventEmitter2 } from '@nestjs/event-emitter';
import {
  CompletionBus,
  WEBHOOK_EVENTS,
  WebhookBot,
  WebhookBotHost,
  type BotOutput,
  type InvocationEvent,
} from '../src/index.js';
import { InMemoryCompletionBus } from '../src/completion/in-memory-completion.bus.js';
import {
  BODY_MALFORMED,
  BODY_NOT_OBJECT,
  INVALID_KEY,
  INVALID_OUTPUTS,
  MISSING_KEY,
} from '../src/errors/webhook-trigger.messages.js';
import { EchoBot } from './fixtures/bots.js';
import { storedCredits, storedInvocations } from './helpers/db.js';
import {
  expectError,
  rawRequest,
  request,
  sleep,
  startRun,
  syncInvocation,
  syncUntilFinished,
  triggerBot,
  until,
  type HttpResult,
} from './helpers/http.js';
import {
  ADAPTERS,
  UNTHROTTLED,
  createTrigger,
  startWebhookApp,
  testDatabases,
  triggerOn,
  type ScratchStore,
  type TestTrigger,
  type WebhookTestApp,
} from './helpers/webhook-app.js';
import { captureEvents, historyEntry, type CapturedEvent } from './helpers/events.js';

/** A bot whose account has no credits row at all. */
@WebhookBot({ id: 'ghost', accountId: 'ghost-account' })
class GhostAccountBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [{ title: 'ran', message: 'yes' }];
  }
}

/** Costs nothing, owned by an account that does not exist. */
@WebhookBot({ id: 'free', accountId: 'ghost-account', credits: 0 })
class FreeBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [{ title: 'free', message: 'ran' }];
  }
}

const ACCOUNT = 'acct';

/** Every adapter on every database: "webhook API on fastify with postgres". */
const ROWS = ADAPTERS.flatMap(([adapterName, makeAdapter]) =>
  testDatabases().map((database) => [adapterName, database.name, makeAdapter, database] as const),
);

describe.each(ROWS)('webhook API on %s with %s', (adapterName, databaseName, makeAdapter, database) => {
  if (database.missingEnv) {
    it.todo(`${databaseName} rows NOT RUN: set ${database.missingEnv}`);
    return;
  }
  describe('with a roomy configuration', () => {
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    let echo: TestTrigger;

    /** A bad request leaves no trace: no invocation row for the trigger, the balance as it was. */
    async function expectNothingStored(trigger: TestTrigger, creditsBefore: number): Promise<void> {
      expect(await storedInvocations(t.store, trigger.id)).toHaveLength(0);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(creditsBefore);
      expect(events.filter((e) => e.payload.triggerId === trigger.id)).toEqual([]);
    }

    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        database,
        options: { rateLimits: UNTHROTTLED },
        events: true,
        providers: [GhostAccountBot, FreeBot],
      });
      events = captureEvents(t);
      echo = await createTrigger(t, 'echo');
    });
    afterAll(() => t.close());
    beforeEach(() => t.admin.setCredits(ACCOUNT, 1000));

    describe('POST /webhooks/:triggerId/trigger', () => {
      it('answers 200 with an invocation id, charges the account and runs the bot with the body as inputs', async () => {
        const res = await triggerBot(echo, { greeting: 'hello' });
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(res.body).toEqual({ success: true, invocation: { id: expect.stringMatching(/^inv_[A-Za-z0-9_-]{22}$/) } });
        expect(await storedCredits(t.store, ACCOUNT)).toBe(999);
        const sync = await syncInvocation(echo, res.body.invocation.id);
        expect(sync.body).toEqual({ success: true, outputs: [{ title: 'greeting', message: 'hello' }] });
      });

      it('answers 404 for unknown, deleted and impossible trigger ids, never 500', async () => {
        const before = (await storedCredits(t.store, ACCOUNT))!;
        const deleted = await createTrigger(t, 'echo', 'to be deleted');
        expect((await triggerBot(deleted, { a: 1 })).status).toBe(200);
        expect(await t.admin.deleteTrigger(deleted.id)).toBe(true);
        const rowsOfDeleted = (await storedInvocations(t.store, deleted.id)).length;

        expectError(await triggerBot(deleted, { a: 1 }), 404); // its own, once valid, key
        const ids = [
          'trg_AAAAAAAAAAAAAAAA', // well-formed, never created
          '..%2Fx',
          '%00',
          '%2Fetc%2Fpasswd',
          "trg_'%20OR%201%3D1--",
          'x'.repeat(90),
          encodeURIComponent('trg_ünïcødé☃'),
        ];
        for (const id of ids) {
          const res = await triggerBot({ url: `${t.baseUrl}/webhooks/${id}/trigger`, key: echo.key }, { a: 1 });
          expectError(res, 404);
          expect(res.body.message).toMatch(/does not exist/);
        }
        expect(await storedInvocations(t.store, deleted.id)).toHaveLength(rowsOfDeleted);
        expect(await storedCredits(t.store, ACCOUNT)).toBe(before - 1);
      });

      it('does not answer 500 for an id longer than any router allows', async () => {
        const res = await triggerBot({ url: `${t.baseUrl}/webhooks/${'x'.repeat(5000)}/trigger`, key: echo.key }, { a: 1 });
        if (adapterName === 'express') {
          expectError(res, 404);
        } else {
          // Fastify's router rejects a path parameter over its maxParamLength (100 by default) with its own
          // 414 before any route (and so this module) runs. Real ids are 20 characters.
          expect(res.status).toBe(414);
        }
      });

      it('serves the trigger path in other letter case exactly when the host router routes it, never with a misleading 400', async () => {
        const res = await triggerBot({ url: `${t.baseUrl}/Webhooks/${echo.id}/TRIGGER`, key: echo.key }, { cased: 'yes' });
        if (adapterName === 'express') {
          // Express routes case-insensitively by default, so the body must have been captured too.
          expect(res.status).toBe(200);
          expect((await syncInvocation(echo, res.body.invocation.id)).body.outputs).toEqual([{ title: 'cased', message: 'yes' }]);
        } else {
          expect(res.status).toBe(404); // Fastify routes case-sensitively: not this module's route
        }
      });

      it('answers 401 for a missing, empty or wrong X-Key, and for the key of another trigger', async () => {
        const before = (await storedCredits(t.store, ACCOUNT))!;
        const target = await createTrigger(t, 'echo', 'locked');
        const sibling = await createTrigger(t, 'echo', 'sibling');
        const otherBot = await createTrigger(t, 'fail', 'other bot');

        const missing = await triggerBot(target, { a: 1 }, { key: null });
        expectError(missing, 401);
        expect(missing.body.message).toBe(MISSING_KEY);
        expectError(await triggerBot(target, { a: 1 }, { key: '' }), 401);
        for (const key of [
          'whk_wrong',
          target.key.slice(0, -1),
          target.key + 'x',
          target.key.toUpperCase(),
          sibling.key,
          otherBot.key,
        ]) {
          const res = await triggerBot(target, { a: 1 }, { key });
          expectError(res, 401);
          expect(res.body.message).toBe(INVALID_KEY);
        }
        await expectNothingStored(target, before);
      });

      it('stops accepting the old key the moment the key is rotated', async () => {
        const trigger = await createTrigger(t, 'echo', 'rotated');
        const earlier = await startRun(trigger, { before: 'rotation' });
        const rotated = await t.admin.rotateKey(trigger.id);
        expect(rotated?.key).toMatch(/^whk_/);
        expect(rotated!.key).not.toBe(trigger.key);
        expectError(await triggerBot(trigger, { a: 1 }), 401);
        expectError(await syncInvocation(trigger, earlier), 401);
        const renewed = { ...trigger, key: rotated!.key! };
        expect((await triggerBot(renewed, { a: 1 })).status).toBe(200);
        expect((await syncInvocation(renewed, earlier)).body.outputs).toEqual([{ title: 'before', message: 'rotation' }]);
      });

      it('accepts the X-Key header in any spelling of its name', async () => {
        for (const name of ['x-key', 'X-KEY', 'X-Key', 'x-KeY']) {
          const res = await rawRequest(echo.url, {
            method: 'POST',
            headers: { [name]: echo.key, 'Content-Type': 'application/json' },
            body: JSON.stringify({ spelledAs: name }),
          });
          expect(res.status).toBe(200);
          expect(res.body.invocation.id).toMatch(/^inv_/);
        }
      });

      it('checks the trigger before the key and the key before the body', async () => {
        const res404 = await triggerBot({ url: `${t.baseUrl}/webhooks/trg_BBBBBBBBBBBBBBBB/trigger`, key: 'wrong' }, undefined, { raw: '{' });
        expectError(res404, 404);
        expectError(await triggerBot(echo, undefined, { key: 'wrong', raw: '{' }), 401);
        expectError(await triggerBot(echo, undefined, { key: 'wrong', raw: 'x', headers: { 'content-type': 'text/plain' } }), 401);
      });

      it('answers 400 for malformed JSON and for JSON that is not an object; nothing is stored or charged', async () => {
        const trigger = await createTrigger(t, 'echo', 'bad bodies');
        const before = (await storedCredits(t.store, ACCOUNT))!;
        for (const raw of ['{', '{"a":', "{'a':1}", '', 'undefined']) {
          const res = await triggerBot(trigger, undefined, { raw });
          expectError(res, 400);
          expect(res.body.message).toBe(BODY_MALFORMED);
        }
        for (const raw of ['[]', '[{"a":1}]', '1', '"s"', 'null', 'true']) {
          const res = await triggerBot(trigger, undefined, { raw });
          expectError(res, 400);
          expect(res.body.message).toBe(BODY_NOT_OBJECT);
        }
        await expectNothingStored(trigger, before);
      });

      it('answers 415 unless the body is declared as JSON; nothing is stored or charged', async () => {
        const trigger = await createTrigger(t, 'echo', 'wrong types');
        const before = (await storedCredits(t.store, ACCOUNT))!;
        for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx']) {
          const res = await triggerBot(trigger, undefined, { raw: '{"a":1}', headers: { 'content-type': type } });
          expectError(res, 415);
          expect(res.body.message).toMatch(/application\/json/);
        }
        // A Uint8Array body goes out without any Content-Type.
        expectError(await triggerBot(trigger, undefined, { raw: new TextEncoder().encode('{"a":1}') }), 415);
        await expectNothingStored(trigger, before);
      });

      it('accepts application/json with parameters, in any case, and +json types', async () => {
        for (const type of ['application/json; charset=utf-8', 'Application/JSON', 'application/vnd.api+json']) {
          const id = await startRun(echo, { type }, { headers: { 'content-type': type } });
          expect((await syncInvocation(echo, id)).body).toEqual({ success: true, outputs: [{ title: 'type', message: type }] });
        }
      });

      it('accepts a ~200 kB body under the default 1 MiB limit (where the host parser would stop at 100 kB) and passes it whole', async () => {
        const big = 'x'.repeat(200_000);
        const id = await startRun(echo, { big });
        const sync = await syncInvocation(echo, id);
        expect(sync.status).toBe(200);
        expect(sync.body.outputs).toHaveLength(1);
        expect(sync.body.outputs[0].message).toBe(big);
      });

      it('answers 413 over the default 1 MiB limit; nothing is stored or charged', async () => {
        const trigger = await createTrigger(t, 'echo', 'too big');
        const before = (await storedCredits(t.store, ACCOUNT))!;
        const res = await triggerBot(trigger, { big: 'x'.repeat(1024 * 1024) });
        expectError(res, 413);
        expect(res.body.message).toMatch(/1048576 bytes/);
        await expectNothingStored(trigger, before);
      });

      it('answers 200 before the bot has finished', async () => {
        const slow = await createTrigger(t, 'slow');
        const res = await triggerBot(slow, { ms: 1500 });
        expect(res.status).toBe(200);
        expect(res.elapsedMs).toBeLessThan(1000);
        const entry = await historyEntry(t, 'slow', res.body.invocation.id);
        expect(['queued', 'running']).toContain(entry?.status);
        expect(entry?.finishedAt).toBeNull();
      });
    });

    describe('credits', () => {
      it('answers 402 when the account has fewer credits than the bot costs: nothing is stored and nothing runs', async () => {
        const trigger = await createTrigger(t, 'echo', 'broke');
        await t.admin.setCredits(ACCOUNT, 0);
        const res = await triggerBot(trigger, { a: 1 });
        expectError(res, 402);
        expect(res.body.message).toMatch(/acct/);
        await sleep(50); // a run, had one been dispatched, would have started by now
        await expectNothingStored(trigger, 0);
        expect((await t.admin.listInvocations('echo', 1000)).filter((i) => i.triggerId === trigger.id)).toEqual([]);
        expect(await t.admin.getCredits(ACCOUNT)).toEqual({ id: ACCOUNT, credits: 0 });
      });

      it('answers 402 when the owning account does not exist', async () => {
        const trigger = await createTrigger(t, 'ghost');
        expect(await t.admin.getCredits('ghost-account')).toBeNull();
        expectError(await triggerBot(trigger, { a: 1 }), 402);
        expect(await storedInvocations(t.store, trigger.id)).toHaveLength(0);
        expect(await t.admin.listInvocations('ghost')).toEqual([]);
        expect(await t.admin.getCredits('ghost-account')).toBeNull();
      });

      it('runs a bot that costs 0 credits without touching any balance', async () => {
        const trigger = await createTrigger(t, 'free');
        const id = await startRun(trigger, {});
        expect((await syncInvocation(trigger, id)).body).toEqual({ success: true, outputs: [{ title: 'free', message: 'ran' }] });
        expect(await t.admin.getCredits('ghost-account')).toBeNull();
      });

      it('debits atomically: 5 credits and 20 concurrent triggers make exactly 5 runs', async () => {
        const trigger = await createTrigger(t, 'echo', 'race');
        await t.admin.setCredits(ACCOUNT, 5);
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => triggerBot(trigger, { i })));
        const statuses = results.map((r) => r.status).sort();
        expect(statuses.filter((s) => s === 200)).toHaveLength(5);
        expect(statuses.filter((s) => s === 402)).toHaveLength(15);
        for (const r of results.filter((r) => r.status === 402)) expectError(r, 402);
        expect(await storedCredits(t.store, ACCOUNT)).toBe(0);
        const rows = await storedInvocations(t.store, trigger.id);
        expect(rows).toHaveLength(5);
        expect(new Set(rows.map((r) => r.id))).toEqual(new Set(results.filter((r) => r.status === 200).map((r) => r.body.invocation.id)));
      });
    });

    describe('Idempotency-Key', () => {
      it('returns the first invocation for a repeated key on the same trigger: one charge, one row, one run', async () => {
        const trigger = await createTrigger(t, 'echo', 'idempotent');
        const first = await triggerBot(trigger, { n: 1 }, { headers: { 'Idempotency-Key': 'order-42' } });
        const second = await triggerBot(trigger, { n: 1 }, { headers: { 'idempotency-key': 'order-42' } });
        expect(first.status).toBe(200);
        expect(second.status).toBe(200);
        expect(second.body).toEqual(first.body);
        // The same key with another body is a different request: refused, nothing charged.
        const other = await triggerBot(trigger, { n: 2 }, { headers: { 'Idempotency-Key': 'order-42' } });
        expectError(other, 422);
        expect(other.body.message).toMatch(/different request body/);
        const id = first.body.invocation.id;
        expect((await syncInvocation(trigger, id)).body).toEqual({ success: true, outputs: [{ title: 'n', message: '1' }] });
        expect(await storedCredits(t.store, ACCOUNT)).toBe(999);
        expect(await storedInvocations(t.store, trigger.id)).toHaveLength(1);
        await until(() => events.some((e) => e.payload.invocationId === id && e.name === WEBHOOK_EVENTS.succeeded));
        expect(events.filter((e) => e.payload.invocationId === id && e.name === WEBHOOK_EVENTS.started)).toHaveLength(1);
      });

      it('keeps the same key on different triggers independent', async () => {
        const a = await createTrigger(t, 'echo', 'idem A');
        const b = await createTrigger(t, 'echo', 'idem B');
        const idA = await startRun(a, { on: 'a' }, { headers: { 'Idempotency-Key': 'same' } });
        const idB = await startRun(b, { on: 'b' }, { headers: { 'Idempotency-Key': 'same' } });
        expect(idB).not.toBe(idA);
        expect(await storedCredits(t.store, ACCOUNT)).toBe(998);
        expect((await syncInvocation(b, idB)).body.outputs).toEqual([{ title: 'on', message: 'b' }]);
      });

      it('gives 10 concurrent requests with one key one invocation and one charge', async () => {
        const trigger = await createTrigger(t, 'echo', 'idem race');
        const results = await Promise.all(
          Array.from({ length: 10 }, () => triggerBot(trigger, { i: 1 }, { headers: { 'Idempotency-Key': 'burst' } })),
        );
        expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
        expect(new Set(results.map((r) => r.body.invocation.id)).size).toBe(1);
        expect(await storedCredits(t.store, ACCOUNT)).toBe(999);
        expect(await storedInvocations(t.store, trigger.id)).toHaveLength(1);
      });

      it('does not remember a key whose request was refused for lack of credits', async () => {
        const trigger = await createTrigger(t, 'echo', 'idem broke');
        await t.admin.setCredits(ACCOUNT, 0);
        expectError(await triggerBot(trigger, { try: 1 }, { headers: { 'Idempotency-Key': 'retry-me' } }), 402);
        await t.admin.setCredits(ACCOUNT, 1);
        const id = await startRun(trigger, { try: 2 }, { headers: { 'Idempotency-Key': 'retry-me' } });
        expect((await syncInvocation(trigger, id)).body.outputs).toEqual([{ title: 'try', message: '2' }]);
        expect(await storedCredits(t.store, ACCOUNT)).toBe(0);
      });

      it('answers 400 for an unusable Idempotency-Key; nothing is stored or charged', async () => {
        const trigger = await createTrigger(t, 'echo', 'idem bad');
        const res = await triggerBot(trigger, { a: 1 }, { headers: { 'Idempotency-Key': 'k'.repeat(256) } });
        expectError(res, 400);
        expect(res.body.message).toMatch(/Idempotency-Key/);
        await expectNothingStored(trigger, 1000);
      });
    });

    describe('GET /webhooks/:triggerId/trigger/invocation/:invocationId/sync', () => {
      it('answers 200 with exactly the outputs of a successful run', async () => {
        const id = await startRun(echo, { greeting: 'hello', n: 42, nested: { a: [1] } });
        const res = await syncInvocation(echo, id);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(res.body).toEqual({
          success: true,
          outputs: [
            { title: 'greeting', message: 'hello' },
            { title: 'n', message: '42' },
            { title: 'nested', message: '{"a":[1]}' },
          ],
        });
        // A finished run answers the same again.
        expect((await syncInvocation(echo, id)).body).toEqual(res.body);
      });

      it('applies the same 401 rules as the trigger endpoint', async () => {
        const id = await startRun(echo, { a: 1 });
        const other = await createTrigger(t, 'echo', 'other key');
        const missing = await syncInvocation(echo, id, { key: null });
        expectError(missing, 401);
        expect(missing.body.message).toBe(MISSING_KEY);
        for (const key of ['', 'whk_wrong', other.key]) expectError(await syncInvocation(echo, id, { key }), 401);
      });

      it('answers 404 for unknown or deleted triggers, and for invocations that are unknown, malformed or belong to another trigger', async () => {
        const a = await createTrigger(t, 'echo', 'sync A');
        const b = await createTrigger(t, 'echo', 'sync B');
        const idB = await startRun(b, { mine: 'b' });
        const idA = await startRun(a, { mine: 'a' });

        const foreign = await syncInvocation(a, idB); // A's id and key, B's invocation
        expectError(foreign, 404);
        expect(foreign.text).not.toMatch(/mine/);
        for (const invocationId of ['inv_AAAAAAAAAAAAAAAAAAAAAA', 'inv_x', '..%2Fx', '%00', a.id]) {
          expectError(await syncInvocation(a, invocationId), 404);
        }
        expectError(await request(`${t.baseUrl}/webhooks/trg_CCCCCCCCCCCCCCCC/trigger/invocation/${idA}/sync`, { headers: { 'x-key': a.key } }), 404);
        await t.admin.deleteTrigger(a.id);
        expectError(await syncInvocation(a, idA), 404);
        // B is untouched and still answers for its own run.
        expect((await syncInvocation(b, idB)).body).toEqual({ success: true, outputs: [{ title: 'mine', message: 'b' }] });
      });

      it('answers 200 with success false and the error message when the bot throws, never a stack', async () => {
        const fail = await createTrigger(t, 'fail');
        const id = await startRun(fail, { message: 'boom' });
        const res = await syncInvocation(fail, id);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ success: false, status: 'failed', outputs: [], error: { message: 'boom' } });
        expect(res.text).not.toMatch(/stack|\bat .*\(|\.ts:\d+/);
      });

      it('answers success false with a clear message when the bot returns invalid outputs', async () => {
        const bad = await createTrigger(t, 'bad-outputs');
        const res = await syncInvocation(bad, await startRun(bad, {}));
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ success: false, status: 'failed', outputs: [], error: { message: INVALID_OUTPUTS, code: 'invalid_outputs' } });
        expect(res.body.error.message).toMatch(/title: string, message: string/);
      });

      it('is woken by the run finishing, not by polling', async () => {
        const slow = await createTrigger(t, 'slow', 'quick wake');
        const t0 = performance.now();
        const id = await startRun(slow, { ms: 200 });
        const res = await syncInvocation(slow, id);
        const elapsed = performance.now() - t0;
        expect(res.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '200' }] });
        expect(elapsed).toBeGreaterThanOrEqual(190);
        expect(elapsed).toBeLessThan(200 + 200);
      });

      it('wakes every client waiting on the same run', async () => {
        const slow = await createTrigger(t, 'slow', 'many waiters');
        const id = await startRun(slow, { ms: 150 });
        const results = await Promise.all(Array.from({ length: 5 }, () => syncInvocation(slow, id)));
        for (const r of results) expect(r.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '150' }] });
        expect((t.app.get(CompletionBus) as InMemoryCompletionBus).waitingIds).toBe(0);
      });

      it('releases the waiter of a client that disconnects, and the run still finishes', async () => {
        const bus = t.app.get(CompletionBus);
        expect(bus).toBeInstanceOf(InMemoryCompletionBus);
        const memoryBus = bus as InMemoryCompletionBus;
        expect(memoryBus.waitingIds).toBe(0);

        const slow = await createTrigger(t, 'slow', 'walk away');
        const id = await startRun(slow, { ms: 1200 });
        const client = new AbortController();
        const abandoned = syncInvocation(slow, id, { signal: client.signal }).catch((e: unknown) => e);
        await until(() => memoryBus.waitingIds === 1, 1000, 'the sync request to wait');
        client.abort();
        expect(await abandoned).toMatchObject({ name: 'AbortError' });
        await until(() => memoryBus.waitingIds === 0, 500, 'the waiter to be released');
        expect((await historyEntry(t, 'slow', id))?.status).toBe('running');

        const later = await syncInvocation(slow, id);
        expect(later.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '1200' }] });
        expect(memoryBus.waitingIds).toBe(0);
      });
    });

    describe('events and stored states', () => {
      it('emits queued, started, succeeded in order with the invocation, trigger, bot and account', async () => {
        const id = await startRun(echo, { a: 1 });
        await syncInvocation(echo, id);
        await until(() => events.filter((e) => e.payload.invocationId === id).length === 3, 1000, 'three events');
        const mine = events.filter((e) => e.payload.invocationId === id);
        const base = { invocationId: id, triggerId: echo.id, botId: 'echo', accountId: ACCOUNT };
        expect(mine).toEqual([
          { name: WEBHOOK_EVENTS.queued, payload: { ...base, status: 'queued' } },
          { name: WEBHOOK_EVENTS.started, payload: { ...base, status: 'running' } },
          { name: WEBHOOK_EVENTS.succeeded, payload: { ...base, status: 'succeeded', durationMs: expect.any(Number) } },
        ]);
        expect(mine[2].payload.durationMs).toBeGreaterThanOrEqual(0);
      });

      it('emits failed for a failing run, with how long it ran', async () => {
        const fail = await createTrigger(t, 'fail', 'events');
        const slowFail = await startRun(fail, { message: 'nope' });
        await syncInvocation(fail, slowFail);
        await until(() => events.some((e) => e.payload.invocationId === slowFail && e.name === WEBHOOK_EVENTS.failed), 1000, 'failed');
        expect(events.filter((e) => e.payload.invocationId === slowFail).map((e) => e.name)).toEqual([
          WEBHOOK_EVENTS.queued,
          WEBHOOK_EVENTS.started,
          WEBHOOK_EVENTS.failed,
        ]);
        const failed = events.find((e) => e.payload.invocationId === slowFail && e.name === WEBHOOK_EVENTS.failed)!;
        expect(failed.payload).toEqual({
          invocationId: slowFail,
          triggerId: fail.id,
          botId: 'fail',
          accountId: ACCOUNT,
          status: 'failed',
          durationMs: expect.any(Number),
        });
      });

      it('stores finished runs as succeeded or failed with their start and finish times', async () => {
        const slow = await createTrigger(t, 'slow', 'timed');
        const fail = await createTrigger(t, 'fail', 'timed');
        const okId = await startRun(slow, { ms: 50 });
        const failId = await startRun(fail, { message: 'kaput' });
        await syncInvocation(slow, okId);
        await syncInvocation(fail, failId);

        const ok = (await historyEntry(t, 'slow', okId))!;
        expect(ok).toMatchObject({ status: 'succeeded', triggerId: slow.id, credits: 1, outputs: [{ title: 'slept', message: '50' }], error: null });
        expect(ok.startedAt).toBeInstanceOf(Date);
        expect(ok.finishedAt).toBeInstanceOf(Date);
        expect(ok.startedAt!.getTime()).toBeGreaterThanOrEqual(ok.createdAt.getTime());
        expect(ok.finishedAt!.getTime() - ok.startedAt!.getTime()).toBeGreaterThanOrEqual(45);

        const failed = (await historyEntry(t, 'fail', failId))!;
        expect(failed).toMatchObject({ status: 'failed', error: { message: 'kaput' } });
        expect(failed.finishedAt!.getTime()).toBeGreaterThanOrEqual(failed.startedAt!.getTime());

        // And in the file itself.
        const [row] = await storedInvocations(t.store, fail.id);
        expect(row).toMatchObject({ id: failId, status: 'failed' });
        expect(row.started_at).not.toBeNull();
        expect(row.finished_at).not.toBeNull();
      });
    });
  });

  describe('with maxBodyBytes 1024, syncTimeoutMs 300 and maxConcurrentRuns 2', () => {
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        database,
        options: { rateLimits: UNTHROTTLED, maxBodyBytes: 1024, syncTimeoutMs: 300, maxConcurrentRuns: 2 },
        events: true,
      });
      events = captureEvents(t);
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    /** `{"p":"xxx…"}` of exactly `size` bytes. */
    const bodyOf = (size: number) => JSON.stringify({ p: 'x'.repeat(size - 8) });

    it('accepts a body of exactly maxBodyBytes and answers 413 one byte over; nothing is stored or charged', async () => {
      const trigger = await createTrigger(t, 'echo', 'limit');
      expect(Buffer.byteLength(bodyOf(1024))).toBe(1024);
      expect((await triggerBot(trigger, undefined, { raw: bodyOf(1024) })).status).toBe(200);
      const res = await triggerBot(trigger, undefined, { raw: bodyOf(1025) });
      expectError(res, 413);
      expect(res.body.message).toMatch(/1024 bytes/);
      expect(await storedInvocations(t.store, trigger.id)).toHaveLength(1);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(999);
    });

    it('answers 413 for an oversized chunked body that declares no length', async () => {
      const trigger = await createTrigger(t, 'echo', 'chunked');
      const res = await rawRequest(trigger.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-key': trigger.key },
        chunks: ['{"p":"', 'x'.repeat(1000), 'x'.repeat(1000), '"}'],
      });
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ success: false, statusCode: 413, error: 'Payload Too Large', message: expect.stringMatching(/1024 bytes/) });
      expect(await storedInvocations(t.store, trigger.id)).toHaveLength(0);
    });

    it('answers 408 when the run outlasts syncTimeoutMs, and a repeated sync gets the outputs', async () => {
      const slow = await createTrigger(t, 'slow', 'timeout');
      const id = await startRun(slow, { ms: 1200 });
      const res = await syncInvocation(slow, id);
      expectError(res, 408);
      expect(res.elapsedMs).toBeGreaterThanOrEqual(290);
      expect(res.elapsedMs).toBeLessThan(1000);
      expect((await historyEntry(t, 'slow', id))?.status).toBe('running');
      expect((t.app.get(CompletionBus) as InMemoryCompletionBus).waitingIds).toBe(0);

      // The spec's recovery: call sync again until the run has finished.
      const last = await syncUntilFinished(slow, id);
      expect(last.status).toBe(200);
      expect(last.body).toEqual({ success: true, outputs: [{ title: 'slept', message: '1200' }] });
    });

    it('runs at most maxConcurrentRuns bots at once and finishes them all', async () => {
      const slow = await createTrigger(t, 'slow', 'concurrency');
      let running = 0;
      let peak = 0;
      const emitter = t.app.get(EventEmitter2);
      const onStart = (e: InvocationEvent) => {
        if (e.triggerId === slow.id) peak = Math.max(peak, ++running);
      };
      const onEnd = (e: InvocationEvent) => {
        if (e.triggerId === slow.id) running--;
      };
      emitter.on(WEBHOOK_EVENTS.started, onStart);
      emitter.on(WEBHOOK_EVENTS.succeeded, onEnd);
      emitter.on(WEBHOOK_EVENTS.failed, onEnd);

      const t0 = performance.now();
      const ids = await Promise.all(Array.from({ length: 4 }, (_, i) => startRun(slow, { ms: 400, i })));
      // Right after accepting, two run and two wait.
      const statuses = await Promise.all(ids.map(async (id) => (await historyEntry(t, 'slow', id))!.status));
      expect(statuses.filter((s) => s === 'running').length).toBeLessThanOrEqual(2);
      expect(statuses.filter((s) => s === 'queued').length).toBeGreaterThanOrEqual(2);

      const results = await Promise.all(ids.map((id) => syncUntilFinished(slow, id)));
      const elapsed = performance.now() - t0;
      expect(results.map((r) => r.body?.success)).toEqual([true, true, true, true]);
      expect(peak).toBe(2);
      expect(elapsed).toBeGreaterThanOrEqual(780); // two waves of 400 ms
      const mine = events.filter((e) => e.payload.triggerId === slow.id && e.name === WEBHOOK_EVENTS.succeeded);
      expect(mine).toHaveLength(4);
      emitter.off(WEBHOOK_EVENTS.started, onStart);
      emitter.off(WEBHOOK_EVENTS.succeeded, onEnd);
      emitter.off(WEBHOOK_EVENTS.failed, onEnd);
    });
  });

  describe('with the default rate limits (10 per second per trigger, 100 per minute per account)', () => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, { database });
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    function expectThrottled(res: HttpResult, maxSeconds: number): void {
      expectError(res, 429);
      const retryAfter = res.headers.get('retry-after');
      expect(retryAfter).toMatch(/^\d+$/);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(retryAfter)).toBeLessThanOrEqual(maxSeconds);
    }

    it('accepts exactly 10 of 15 quick requests on one trigger and answers 429 with Retry-After to the rest', async () => {
      const trigger = await createTrigger(t, 'echo', 'burst');
      const results = await Promise.all(Array.from({ length: 15 }, (_, i) => triggerBot(trigger, { i })));
      const accepted = results.filter((r) => r.status === 200);
      const throttled = results.filter((r) => r.status !== 200);
      expect(accepted).toHaveLength(10);
      expect(throttled).toHaveLength(5);
      for (const r of throttled) {
        expectThrottled(r, 1);
        expect(r.body.message).toMatch(/trigger/);
      }
      expect(await storedInvocations(t.store, trigger.id)).toHaveLength(10);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(990);

      // The limit is temporary: after Retry-After the trigger works again.
      await sleep(Number(throttled[0].headers.get('retry-after')) * 1000 + 50);
      expect((await triggerBot(trigger, { again: true })).status).toBe(200);
    });

    it('counts sync requests toward the same per-trigger limit', async () => {
      const trigger = await createTrigger(t, 'echo', 'sync counts');
      const id = await startRun(trigger, { a: 1 });
      for (let i = 0; i < 9; i++) expect((await syncInvocation(trigger, id)).status).toBe(200);
      expectThrottled(await syncInvocation(trigger, id), 1);
      expectThrottled(await triggerBot(trigger, { a: 2 }), 1);
    });

    it('does not count requests with a wrong key', async () => {
      const trigger = await createTrigger(t, 'echo', 'wrong keys');
      const wrong = await Promise.all(Array.from({ length: 20 }, () => triggerBot(trigger, { a: 1 }, { key: 'whk_not-the-key' })));
      for (const r of wrong) expectError(r, 401);
      // The whole budget is still there.
      const right = await Promise.all(Array.from({ length: 10 }, (_, i) => triggerBot(trigger, { i })));
      expect(right.map((r) => r.status)).toEqual(Array(10).fill(200));
    });
  });

  describe('with perAccount 3 per minute', () => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, { database, options: { rateLimits: { perAccount: { limit: 3, ttlMs: 60_000 } } } });
      await t.admin.setCredits(ACCOUNT, 1000);
    });
    afterAll(() => t.close());

    it('counts every trigger of the account together: the 4th request gets 429', async () => {
      const a = await createTrigger(t, 'echo', 'account A');
      const b = await createTrigger(t, 'fail', 'account B');
      expect((await triggerBot(a, { n: 1 })).status).toBe(200);
      expect((await triggerBot(b, { n: 2 })).status).toBe(200);
      expect((await triggerBot(a, { n: 3 })).status).toBe(200);
      const res = await triggerBot(b, { n: 4 });
      expectError(res, 429);
      expect(res.body.message).toMatch(/account/);
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(await storedInvocations(t.store, b.id)).toHaveLength(1);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(997);
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
