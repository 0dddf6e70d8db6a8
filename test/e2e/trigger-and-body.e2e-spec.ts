/**
 * POST /webhooks/:triggerId/trigger: which trigger ids, keys and bodies are accepted, in what order they are
 * judged, and that a refused request stores and charges nothing.
 */
import { BODY_MALFORMED, BODY_NOT_OBJECT, INVALID_KEY, MISSING_KEY } from '../../src/errors/webhook-trigger.messages.js';
import { expectNothingStored, storedCredits, storedInvocations } from '../helpers/db.js';
import { historyEntry, type CapturedEvent } from '../helpers/events.js';
import { expectError, rawRequest, send, startRun, syncInvocation, triggerBot } from '../helpers/http.js';
import {
  UNTHROTTLED,
  createTrigger,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  type TestTrigger,
  type WebhookTestApp,
  ROOMY_APP,
  describeApp,
} from '../helpers/webhook-app.js';

const ACCOUNT = 'acct';

describeOnEveryAdapterAndDatabase('trigger and body', ({ adapterName, makeAdapter, database }) => {
  describe('with a roomy configuration', () => {
    const shared = describeApp({ makeAdapter, database }, ROOMY_APP, { account: ACCOUNT });
    let t: WebhookTestApp;
    let events: CapturedEvent[];
    let echo: TestTrigger;
    beforeAll(async () => {
      ({ app: t, events } = shared);
      echo = await createTrigger(t, 'echo');
    });

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
        for (const key of ['whk_wrong', target.key.slice(0, -1), target.key + 'x', target.key.toUpperCase(), sibling.key, otherBot.key]) {
          const res = await triggerBot(target, { a: 1 }, { key });
          expectError(res, 401);
          expect(res.body.message).toBe(INVALID_KEY);
        }
        await expectNothingStored(t, events, target, ACCOUNT, before);
      });

      it('keeps the old key through the grace of a rotation, and stops accepting it the moment it is revoked', async () => {
        const trigger = await createTrigger(t, 'echo', 'rotated');
        const earlier = await startRun(trigger, { before: 'rotation' });
        const rotated = await t.admin.rotateKey(trigger.id);
        expect(rotated?.key).toMatch(/^whk_/);
        expect(rotated!.key).not.toBe(trigger.key);
        expect((await triggerBot(trigger, { a: 0 })).status).toBe(200);
        const [old] = (await t.admin.listKeys(trigger.id))!;
        expect(await t.admin.revokeKey(trigger.id, old.id)).toBe(true);
        expectError(await triggerBot(trigger, { a: 1 }), 401);
        expectError(await syncInvocation(trigger, earlier), 401);
        const renewed = { ...trigger, key: rotated!.key };
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
        const res404 = await triggerBot({ url: `${t.baseUrl}/webhooks/trg_BBBBBBBBBBBBBBBB/trigger`, key: 'wrong' }, undefined, {
          raw: '{',
        });
        expectError(res404, 404);
        expectError(await triggerBot(echo, undefined, { key: 'wrong', raw: '{' }), 401);
        expectError(await triggerBot(echo, undefined, { key: 'wrong', raw: 'x', headers: { 'content-type': 'text/plain' } }), 401);
      });

      it('answers 405 with Allow, in the webhook error shape, for a webhook path called with another method; no key needed', async () => {
        const run = `${echo.url}/invocation/inv_AAAAAAAAAAAAAAAAAAAAAA`;
        const unknown = `${t.baseUrl}/webhooks/trg_AAAAAAAAAAAAAAAA/trigger`;
        const cases: Array<[string, string, string]> = [
          ['GET', echo.url, 'POST'],
          ['PUT', unknown, 'POST'], // an unknown trigger: the method is judged first, from the path alone
          ['POST', `${run}/sync`, 'GET, HEAD'],
          ['DELETE', run, 'GET, HEAD'],
          ['POST', `${run}/events`, 'GET, HEAD'],
          ['GET', `${run}/cancel`, 'POST'],
        ];
        for (const [method, url, allow] of cases) {
          const res = await send(method, url, method === 'GET' ? {} : { json: { a: 1 } });
          expectError(res, 405);
          expect({ method, allow: res.headers.get('allow') }).toEqual({ method, allow });
        }
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
        await expectNothingStored(t, events, trigger, ACCOUNT, before);
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
        await expectNothingStored(t, events, trigger, ACCOUNT, before);
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
        await expectNothingStored(t, events, trigger, ACCOUNT, before);
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
  });

  describe('with maxBodyBytes 1024, syncTimeoutMs 300 and maxConcurrentRuns 2', () => {
    let t: WebhookTestApp;
    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, {
        database,
        // One account: its own cap is the total, so this measures maxConcurrentRuns alone.
        options: { rateLimits: UNTHROTTLED, maxBodyBytes: 1024, syncTimeoutMs: 300, maxConcurrentRuns: 2, maxConcurrentRunsPerAccount: 2 },
        events: true,
      });
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

    it('accepts a chunked body of exactly maxBodyBytes and answers 413 for a chunked body one byte over maxBodyBytes', async () => {
      const trigger = await createTrigger(t, 'echo', 'chunked-edge');
      const before = (await storedCredits(t.store, ACCOUNT))!;
      const send = (size: number) => {
        const whole = bodyOf(size);
        return rawRequest(trigger.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-key': trigger.key },
          chunks: [whole.slice(0, 500), whole.slice(500)],
        });
      };
      expect((await send(1024)).status).toBe(200);
      const over = await send(1025);
      expect(over.status).toBe(413);
      expect(over.body).toMatchObject({ statusCode: 413, message: expect.stringMatching(/1024 bytes/) });
      expect(await storedInvocations(t.store, trigger.id)).toHaveLength(1);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(before - 1);
    });

    it('answers 413 for an oversized chunked body that declares no length', async () => {
      const trigger = await createTrigger(t, 'echo', 'chunked');
      const res = await rawRequest(trigger.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-key': trigger.key },
        chunks: ['{"p":"', 'x'.repeat(1000), 'x'.repeat(1000), '"}'],
      });
      expect(res.status).toBe(413);
      expect(res.body).toEqual({
        success: false,
        statusCode: 413,
        error: 'Payload Too Large',
        message: expect.stringMatching(/1024 bytes/),
      });
      expect(await storedInvocations(t.store, trigger.id)).toHaveLength(0);
    });
  });
});
