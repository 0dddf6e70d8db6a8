/**
 * Signed callbacks end to end (docs/callbacks.md): the admin API's callback contract over real HTTP, and
 * deliveries from the outbox to a real local receiver (node:http on 127.0.0.1, opened with
 * callbackAllowedHosts), verified with verifyWebhookSignature (and the standardwebhooks package): the completed event with the run's body, started
 * and output events, retries by a short schedule (500, time-out, 429 with Retry-After), 410 and a run of failed
 * deliveries disabling the callback (with its event), redeliver, and SSRF refusals at PUT.
 */
import { Injectable } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Webhook } from 'standardwebhooks';
import {
  CALLBACK_DISABLED_EVENT,
  InvocationRepository,
  verifyWebhookSignature,
  WebhookTriggerAdminModule,
  type CallbackDisabledEvent,
  type WebhookTriggerModuleExtras,
  type WebhookTriggerModuleOptions,
} from '../../src/index.js';
import { newDeliveryId } from '../../src/deliveries/callback-outbox.js';
import { generateMessageId } from '../../src/callbacks/standard-webhooks.js';
import { CallbackDeliveries, MAX_IN_FLIGHT_PER_ACCOUNT, MAX_IN_FLIGHT_PER_TRIGGER } from '../../src/lifecycle/callback-deliveries.js';
import { HistoryRetention } from '../../src/lifecycle/history-retention.js';
import { LeaseRecovery } from '../../src/lifecycle/lease-recovery.js';
import { newInvocationId } from '../../src/keys/ids.js';
import { CallbackStore } from '../../src/persistence/callback-store.js';
import { WebhookStorage } from '../../src/persistence/webhook-storage.js';
import { WebhookUnitOfWork, type WebhookTransaction } from '../../src/persistence/unit-of-work.js';
import { EmitBot, OtherEchoBot } from '../fixtures/bots.js';
import { InMemoryWebhookStorage } from '../../src/persistence/memory/in-memory-webhook-storage.js';
import { ADMIN_TEST_TOKEN, TestAdminGuard } from '../fixtures/admin-guard.js';
import { startCallbackReceiver, type CallbackReceiver, type ReceivedCallback } from '../helpers/callback-receiver.js';
import { expectAdminError, ISO, send, startRun, syncUntilFinished, until } from '../helpers/http.js';
import {
  createTrigger,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  UNTHROTTLED,
  type TestTrigger,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';

const AUTH = { Authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
/** Short, so retries happen within a test: first attempt at once, then 300 ms, then 300 ms. */
const SCHEDULE = [0, 300, 300];

interface Body {
  type: string;
  timestamp: string;
  data: { invocation: Record<string, unknown>; output?: { index: number } };
}

describeOnEveryAdapterAndDatabase('callbacks', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;
  let api: string;
  let receiver: CallbackReceiver;
  const disabled: CallbackDisabledEvent[] = [];
  const get = (path: string) => send('GET', `${api}${path}`, { headers: AUTH });
  const post = (path: string, json?: unknown) => send('POST', `${api}${path}`, { headers: AUTH, json });
  const put = (path: string, json: unknown) => send('PUT', `${api}${path}`, { headers: AUTH, json });
  const del = (path: string) => send('DELETE', `${api}${path}`, { headers: AUTH });

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      database,
      events: true,
      providers: [EmitBot, OtherEchoBot],
      options: {
        keySecret: 'callbacks-test-secret-0123456789',
        accounts: { acct: { credits: 10_000 }, other: { credits: 10_000 } },
        rateLimits: UNTHROTTLED,
        callbackAllowedHosts: ['127.0.0.1'],
        callbackRetryScheduleMs: SCHEDULE,
        callbackDisableAfterFailures: 2,
        callbackTimeoutMs: 1_000,
      },
      imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [TestAdminGuard] })],
    });
    api = `${t.baseUrl}/admin/api`;
    t.app.get(EventEmitter2).on(CALLBACK_DISABLED_EVENT, (e: CallbackDisabledEvent) => disabled.push(e));
  });
  afterAll(() => t.close());

  beforeEach(async () => {
    receiver = await startCallbackReceiver();
  });
  afterEach(() => receiver.close());

  /** A trigger of `botId` whose callback goes to the receiver; returns it with the callback's secret. */
  async function withCallback(botId = 'echo', events?: string[]): Promise<{ trigger: TestTrigger; secret: string }> {
    const trigger = await createTrigger(t, botId);
    const res = await put(`/triggers/${trigger.id}/callback`, { url: `${receiver.origin}/hooks/runs`, ...(events ? { events } : {}) });
    expect(res.status).toBe(200);
    return { trigger, secret: res.body.secret as string };
  }

  function verified(call: ReceivedCallback, secret: string): Body {
    return verifyWebhookSignature<Body>(secret, call.headers, call.body);
  }

  const deliveries = async (triggerId: string) => {
    const res = await get(`/triggers/${triggerId}/deliveries`);
    expect(res.status).toBe(200);
    return res.body as Array<Record<string, unknown>>;
  };

  describe('the admin API', () => {
    it('sets, shows, rotates and deletes a callback', async () => {
      const trigger = await createTrigger(t, 'echo');
      const url = `${receiver.origin}/hooks/a`;
      expectAdminError(await get(`/triggers/${trigger.id}/callback`), 404);
      // The trigger itself says it has none (what the screens read: no 404 to ask for).
      expect((await get(`/triggers/${trigger.id}`)).body).toMatchObject({ id: trigger.id, callback: null });
      const set = await put(`/triggers/${trigger.id}/callback`, { url });
      expect(set.status).toBe(200);
      expect(set.body).toMatchObject({
        url,
        events: ['invocation.completed'],
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+=*$/),
        enabled: true,
      });
      expect((await get(`/triggers/${trigger.id}/callback`)).body).toMatchObject({ url, secret: set.body.secret, enabled: true });
      expect((await get(`/triggers/${trigger.id}`)).body.callback).toEqual(set.body);
      // Changing the URL and events keeps the secret; completed is always among the events.
      const changed = await put(`/triggers/${trigger.id}/callback`, {
        url: `${url}2`,
        events: ['invocation.output', 'invocation.started'],
      });
      expect(changed.body).toMatchObject({
        url: `${url}2`,
        events: ['invocation.started', 'invocation.output', 'invocation.completed'],
        secret: set.body.secret,
      });
      const rotated = await post(`/triggers/${trigger.id}/callback/rotate-secret`);
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).toMatch(/^whsec_/);
      expect(rotated.body.secret).not.toBe(set.body.secret);
      expect((await get(`/triggers/${trigger.id}/callback`)).body.secret).toBe(rotated.body.secret);
      expect((await del(`/triggers/${trigger.id}/callback`)).status).toBe(204);
      expectAdminError(await get(`/triggers/${trigger.id}/callback`), 404);
      expect((await get(`/triggers/${trigger.id}`)).body.callback).toBeNull();
      expectAdminError(await del(`/triggers/${trigger.id}/callback`), 404);
      expectAdminError(await post(`/triggers/${trigger.id}/callback/rotate-secret`), 404);
    });

    it('removes the callback with its trigger, and a pending delivery is then not sent', async () => {
      const { trigger } = await withCallback('slow');
      const id = await startRun(trigger, { ms: 300 });
      expect((await del(`/triggers/${trigger.id}`)).status).toBe(204);
      // A delivery is stored with the run's final change, so once the run is finished there is one or never will be.
      await until(async () => (await t.admin.getInvocation(id))?.finishedAt != null, 3_000, 'the run to finish');
      expect(await t.admin.listInvocationDeliveries(id)).toEqual([]); // the callback was gone: no delivery was stored
      expect(receiver.received).toHaveLength(0);
    });

    it('answers 404 for an unknown trigger and 400 for a bad URL, a private address not allowed, or bad events', async () => {
      expectAdminError(await put('/triggers/trg_AAAAAAAAAAAAAAAA/callback', { url: `${receiver.origin}/x` }), 404);
      expectAdminError(await get('/triggers/trg_AAAAAAAAAAAAAAAA/deliveries'), 404);
      const trigger = await createTrigger(t, 'echo');
      for (const url of [
        'http://10.1.2.3/hook',
        'http://169.254.169.254/latest',
        'http://[::1]:8080/x',
        'http://localhost/x',
        'ftp://example.com/x',
        'nope',
        42,
      ]) {
        const res = await put(`/triggers/${trigger.id}/callback`, { url });
        expectAdminError(res, 400);
        expect(String(res.body.message)).toMatch(/^Invalid callback URL/);
      }
      expectAdminError(
        await put(`/triggers/${trigger.id}/callback`, { url: `${receiver.origin}/x`, events: ['invocation.exploded'] }),
        400,
      );
      expectAdminError(await put(`/triggers/${trigger.id}/callback`, 'text'), 400);
      expectAdminError(await get(`/triggers/${trigger.id}/callback`), 404);
    });
  });

  describe('claims', () => {
    it('lets one sender hold an attempt: another is refused while its lease is fresh, and takes it once it ran out', async () => {
      const { trigger } = await withCallback('echo');
      await t.admin.deleteCallback(trigger.id); // nothing of this app's own sender in the way
      const store = t.app.get(CallbackStore);
      const now = new Date();
      const id = `dlv_${'c'.repeat(18)}${Date.now().toString(36).slice(-4)}`;
      await store.insertDelivery({
        id,
        triggerId: trigger.id,
        invocationId: 'inv_AAAAAAAAAAAAAAAAAAAAAA',
        event: 'invocation.completed',
        msgId: 'msg_claims',
        body: '{}',
        status: 'pending',
        attempts: 0,
        nextAttemptAt: now,
        lastAttemptAt: null,
        responseStatus: null,
        latencyMs: null,
        lastError: null,
        createdAt: now,
      });
      const later = (ms: number) => new Date(now.getTime() + ms);
      expect(await store.claim(id, 'sender-a', now, later(1_000))).toMatchObject({ id, msgId: 'msg_claims', attempts: 0 });
      expect(await store.claim(id, 'sender-b', later(500), later(1_500))).toBeNull();
      // sender-a died: once its lease ran out, sender-b takes the delivery, and a late write of sender-a changes nothing.
      expect(await store.claim(id, 'sender-b', later(1_001), later(2_000))).toMatchObject({ id });
      const attempt = { attemptedAt: later(1_002), nextAttemptAt: null, responseStatus: 200, latencyMs: 1, error: null };
      expect(await store.recordAttempt(id, 'sender-a', { ...attempt, status: 'delivered' })).toBe(false);
      expect(await store.recordAttempt(id, 'sender-b', { ...attempt, status: 'delivered' })).toBe(true);
      expect(await store.findDelivery(id)).toMatchObject({ status: 'delivered', attempts: 1 });
      expect(await store.claim(id, 'sender-c', later(10_000), later(11_000))).toBeNull(); // delivered: never claimed again
    });
  });

  describe('deliveries', () => {
    it('delivers invocation.completed, signed, with the run as its body, and lists it as delivered', async () => {
      const { trigger, secret } = await withCallback('echo');
      const id = await startRun(trigger, { greeting: 'hello' });
      await until(() => receiver.received.length === 1, 5_000, 'the completed callback');
      const call = receiver.received[0];
      expect(call).toMatchObject({ method: 'POST', path: '/hooks/runs' });
      expect(call.headers['webhook-id']).toMatch(/^msg_/);
      const body = verified(call, secret);
      // The standardwebhooks package, an independent oracle, verifies it too.
      expect(new Webhook(secret).verify(call.body.toString(), call.headers as Record<string, string>)).toEqual(body);
      expect(body).toEqual({
        type: 'invocation.completed',
        timestamp: ISO,
        data: {
          invocation: {
            id,
            triggerId: trigger.id,
            botId: 'echo',
            status: 'succeeded',
            outputs: [{ title: 'greeting', message: 'hello' }],
            error: null,
            createdAt: ISO,
            startedAt: ISO,
            finishedAt: ISO,
          },
        },
      });
      await until(async () => (await deliveries(trigger.id))[0]?.status === 'delivered', 2_000, 'delivered in the log');
      expect(await deliveries(trigger.id)).toEqual([
        {
          id: expect.stringMatching(/^dlv_/),
          invocationId: id,
          event: 'invocation.completed',
          attempts: 1,
          status: 'delivered',
          responseStatus: 200,
          lastAttemptAt: ISO,
          nextAttemptAt: null,
          latencyMs: expect.any(Number),
          error: null,
          createdAt: ISO,
        },
      ]);
      expect((await get(`/invocations/${id}/deliveries`)).body).toHaveLength(1);
    });

    it('sends started and output events when chosen, each with its own webhook-id, then completed', async () => {
      const { trigger, secret } = await withCallback('emit', ['invocation.started', 'invocation.output']);
      const id = await startRun(trigger, { n: 2, ms: 30 });
      await syncUntilFinished(trigger, id);
      await until(() => receiver.received.length === 4, 5_000, 'four callbacks');
      const bodies = receiver.received.map((call) => verified(call, secret));
      const byType = (type: string) => bodies.filter((b) => b.type === type);
      expect(byType('invocation.started')).toHaveLength(1);
      expect(byType('invocation.started')[0].data.invocation).toMatchObject({ id, status: 'running', finishedAt: null });
      const completed = byType('invocation.completed')[0].data.invocation;
      expect(completed).toMatchObject({
        status: 'succeeded',
        outputs: [
          { title: 'step 1', message: '1' },
          { title: 'step 2', message: '2' },
          { title: 'returned', message: '2' },
        ],
      });
      // Each output event holds its one output and its place; deliveries are not ordered, the index orders them.
      const outputEvents = byType('invocation.output').sort((a, b) => a.data.output!.index - b.data.output!.index);
      expect(outputEvents.map((b) => [b.data.output, b.data.invocation.outputs])).toEqual([
        [{ index: 0 }, [{ title: 'step 1', message: '1' }]],
        [{ index: 1 }, [{ title: 'step 2', message: '2' }]],
      ]);
      const rebuilt: unknown[] = [];
      for (const b of outputEvents) rebuilt[b.data.output!.index] = (b.data.invocation.outputs as unknown[])[0];
      expect(rebuilt).toEqual((completed.outputs as unknown[]).slice(0, 2));
      expect(new Set(receiver.received.map((c) => c.headers['webhook-id'])).size).toBe(4);
    });

    it('stores output deliveries that grow with the output count, not its square (500 emits)', async () => {
      const { trigger } = await withCallback('emit', ['invocation.output']);
      const n = 500;
      const id = await startRun(trigger, { n, ms: 0, returns: false });
      expect((await syncUntilFinished(trigger, id)).body).toMatchObject({ success: true });
      // The run's final state is stored after its outputs' deliveries (each in its append's transaction).
      const store = t.app.get(CallbackStore);
      const listed = (await store.listByInvocation(id)).filter((d) => d.event === 'invocation.output');
      expect(listed).toHaveLength(n);
      const bodies = await Promise.all(listed.map(async (d) => (await store.findDelivery(d.id))!.body));
      // One body is the run's fixed fields and one output: the last differs from the first by a few digits, and
      // they add up to n of them (500 emits: ~190 KB; with the list so far in each, 4.7 MB).
      const sizes = bodies.map((b) => Buffer.byteLength(b));
      const first = sizes[0];
      expect(Math.max(...sizes)).toBeLessThan(first + 16);
      expect(sizes.reduce((sum, size) => sum + size, 0)).toBeLessThan(n * (first + 16));
      const parsed = bodies.map((b) => JSON.parse(b) as Body);
      expect(parsed.map((b) => b.data.output!.index).sort((a, b) => a - b)).toEqual([...Array(n).keys()]);
      expect(parsed.every((b) => (b.data.invocation.outputs as unknown[]).length === 1)).toBe(true);
      // Let the sender deliver them all before the receiver closes.
      await until(() => receiver.received.length >= n, 20_000, `${n} output callbacks`);
    });

    it('stores a started delivery lost to a crash (after the claim, before its delivery) with the completion at recovery', async () => {
      const { trigger, secret } = await withCallback('echo', ['invocation.started']);
      // A run claimed by a process that died right after its claim: running, its lease run out, no delivery.
      const id = newInvocationId();
      const invocations = t.app.get(InvocationRepository);
      await invocations.insert({
        id,
        triggerId: trigger.id,
        botId: 'echo',
        accountId: 'acct',
        inputs: {},
        credits: 1,
        idempotencyKey: null,
        requestHash: null,
        createdAt: new Date(),
      });
      expect(await invocations.markRunning(id, new Date(), 'a-dead-process', new Date(Date.now() - 1))).not.toBeNull();
      expect(await deliveries(trigger.id)).toEqual([]);

      await t.app.get(LeaseRecovery).recoverExpired();
      await until(() => receiver.received.length === 2, 5_000, 'two callbacks');
      const bodies = receiver.received.map((call) => verified(call, secret));
      expect(bodies.map((b) => [b.type, b.data.invocation.status]).sort()).toEqual([
        ['invocation.completed', 'failed'],
        ['invocation.started', 'running'],
      ]);
      expect((await deliveries(trigger.id)).map((d) => d.event).sort()).toEqual(['invocation.completed', 'invocation.started']);
    });

    it('retries a failed attempt by the schedule with the same webhook-id, and a time-out too', async () => {
      const { trigger, secret } = await withCallback('echo');
      let calls = 0;
      receiver.respond((res) => {
        calls += 1;
        if (calls === 1) res.writeHead(500).end('down');
        else if (calls === 2)
          return; // never answers: the 1 s time-out
        else res.writeHead(204).end();
      });
      const id = await startRun(trigger, { a: 'b' });
      await until(() => receiver.received.length === 3, 8_000, 'three attempts');
      const ids = receiver.received.map((c) => c.headers['webhook-id']);
      expect(new Set(ids).size).toBe(1);
      for (const call of receiver.received) expect(verified(call, secret).data.invocation.id).toBe(id);
      await until(async () => (await deliveries(trigger.id))[0]?.status === 'delivered', 2_000, 'delivered');
      expect((await deliveries(trigger.id))[0]).toMatchObject({ attempts: 3, status: 'delivered', responseStatus: 204 });
    });

    it('waits as long as a 429 Retry-After asks before the next attempt', async () => {
      const { trigger } = await withCallback('echo');
      const at: number[] = [];
      receiver.respond((res) => {
        at.push(Date.now());
        if (at.length === 1) res.writeHead(429, { 'Retry-After': '2' }).end();
        else res.writeHead(200).end();
      });
      await startRun(trigger);
      await until(() => at.length === 2, 6_000, 'the second attempt');
      expect(at[1] - at[0]).toBeGreaterThanOrEqual(1_900); // not the schedule's 300 ms
      const [logged] = await deliveries(trigger.id);
      expect(logged).toMatchObject({ attempts: expect.any(Number) });
    });

    it('disables the callback on 410 Gone, with an event, and sends nothing more', async () => {
      const { trigger } = await withCallback('echo');
      receiver.respond((res) => res.writeHead(410).end());
      await startRun(trigger);
      await until(async () => (await get(`/triggers/${trigger.id}/callback`)).body.enabled === false, 5_000, 'disabled');
      expect((await get(`/triggers/${trigger.id}/callback`)).body).toMatchObject({
        enabled: false,
        disabledReason: expect.stringMatching(/410/),
      });
      expect(disabled).toContainEqual(expect.objectContaining({ triggerId: trigger.id, consecutiveFailures: 0 }));
      expect((await deliveries(trigger.id))[0]).toMatchObject({ status: 'failed', attempts: 1, responseStatus: 410, nextAttemptAt: null });
      const whileDisabled = await startRun(trigger);
      await syncUntilFinished(trigger, whileDisabled);
      // A disabled callback gets no delivery: none was stored with the run's final change, so none can be sent.
      expect(await t.admin.listInvocationDeliveries(whileDisabled)).toEqual([]);
      expect(receiver.received).toHaveLength(1);
      // Setting it again enables it: the next run's delivery is the only one that arrives.
      receiver.respond((res) => res.writeHead(200).end());
      expect((await put(`/triggers/${trigger.id}/callback`, { url: `${receiver.origin}/hooks/runs` })).body.enabled).toBe(true);
      const enabledAgain = await startRun(trigger);
      await until(() => receiver.received.length === 2, 5_000, 'the delivery of the run after re-enabling');
      expect(receiver.received[1].body.toString()).toContain(enabledAgain);
      expect(receiver.received[1].body.toString()).not.toContain(whileDisabled);
    });

    it('disables the callback after callbackDisableAfterFailures deliveries in a row failed every attempt', async () => {
      const { trigger } = await withCallback('echo');
      receiver.respond((res) => res.writeHead(500).end());
      await syncUntilFinished(trigger, await startRun(trigger));
      await until(async () => (await deliveries(trigger.id))[0]?.status === 'failed', 5_000, 'first delivery given up');
      expect((await deliveries(trigger.id))[0]).toMatchObject({
        attempts: SCHEDULE.length,
        responseStatus: 500,
        error: expect.stringMatching(/500/),
      });
      expect((await get(`/triggers/${trigger.id}/callback`)).body).toMatchObject({ enabled: true, consecutiveFailures: 1 });
      await syncUntilFinished(trigger, await startRun(trigger));
      await until(async () => (await get(`/triggers/${trigger.id}/callback`)).body.enabled === false, 5_000, 'disabled');
      expect(receiver.received).toHaveLength(2 * SCHEDULE.length);
      expect(disabled).toContainEqual(expect.objectContaining({ triggerId: trigger.id, consecutiveFailures: 2 }));
    });

    it('keeps sending past its in-flight bounds: 50 slow deliveries of 10 triggers arrive without waiting for the sweep', async () => {
      // Five triggers of each of two accounts.
      const bots = ['echo', 'other-echo'].flatMap((botId) => Array.from({ length: 5 }, () => botId));
      const triggers = await Promise.all(bots.map(async (botId) => (await withCallback(botId)).trigger));
      receiver.respond((res) => setTimeout(() => res.writeHead(200).end(), 300));
      const started = Date.now();
      // 5 runs of each: over each account's MAX_IN_FLIGHT_PER_ACCOUNT, and each trigger's MAX_IN_FLIGHT_PER_TRIGGER.
      await Promise.all(triggers.flatMap((trigger) => Array.from({ length: 5 }, (_, i) => startRun(trigger, { i: String(i) }))));
      await until(() => receiver.received.length === 50, 4_000, '50 callbacks');
      expect(Date.now() - started).toBeLessThan(2_500); // 8 an account, 4 a trigger, 300 ms each (~1.2 s); the sweep runs only every 5 s
      for (const trigger of triggers) {
        await until(async () => (await deliveries(trigger.id)).every((d) => d.status === 'delivered'), 2_000, 'all delivered');
      }
    });

    it('redelivers a delivery with the same webhook-id and body (202), and 404 for an unknown one', async () => {
      const { trigger, secret } = await withCallback('echo');
      await startRun(trigger, { x: 'y' });
      await until(async () => (await deliveries(trigger.id))[0]?.status === 'delivered', 5_000, 'delivered');
      const [first] = await deliveries(trigger.id);
      const res = await post(`/deliveries/${first.id as string}/redeliver`);
      expect(res.status).toBe(202);
      await until(() => receiver.received.length === 2, 5_000, 'the redelivery');
      const [a, b] = receiver.received;
      expect(b.headers['webhook-id']).toBe(a.headers['webhook-id']);
      expect(b.body.toString()).toBe(a.body.toString());
      expect(verified(b, secret).type).toBe('invocation.completed');
      await until(async () => (await deliveries(trigger.id))[0]?.attempts === 2, 2_000, 'two attempts');
      expectAdminError(await post('/deliveries/dlv_AAAAAAAAAAAAAAAAAAAAAA/redeliver'), 404);
      expectAdminError(await post('/deliveries/nope/redeliver'), 404);
    });
  });
});

describeOnEveryAdapterAndDatabase('callbacks of several triggers', ({ makeAdapter, database }) => {
  let t: WebhookTestApp;
  /** Never answers: each attempt holds its place until the callback time-out (15 s) or the receiver closes. */
  let hanging: CallbackReceiver;
  let fast: CallbackReceiver;

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      database,
      providers: [OtherEchoBot],
      options: {
        accounts: { acct: { credits: 10_000 }, other: { credits: 10_000 } },
        rateLimits: UNTHROTTLED,
        callbackAllowedHosts: ['127.0.0.1'],
        callbackRetryScheduleMs: [0, 60_000],
      },
    });
  });
  afterAll(() => t.close());

  beforeEach(async () => {
    hanging = await startCallbackReceiver();
    hanging.respond(() => undefined);
    fast = await startCallbackReceiver();
  });
  afterEach(async () => {
    // The hanging attempts fail when the receiver goes; deleting the callbacks first ends their deliveries.
    for (const bot of ['echo', 'other-echo'])
      for (const trigger of await t.admin.listTriggers(bot)) await t.admin.deleteCallback(trigger.id);
    await hanging.close();
    await fast.close();
    // Their attempts end (the receiver went; the rest find no callback): none holds a place in the next test.
    const sender = t.app.get(CallbackDeliveries);
    await until(() => sender.attemptsInFlight === 0, 5_000, 'the attempts to end');
  });

  /** A trigger of `botId` (echo: account acct; other-echo: account other) whose callback goes to `receiver`. */
  async function withCallbackTo(receiver: CallbackReceiver, botId = 'echo'): Promise<TestTrigger> {
    const trigger = await createTrigger(t, botId);
    await t.admin.setCallback(trigger.id, { url: `${receiver.origin}/hooks` });
    return trigger;
  }

  it("holds a hanging receiver to its trigger's places: another trigger's callback is delivered at once", async () => {
    const busy = await withCallbackTo(hanging);
    const quiet = await withCallbackTo(fast);
    await Promise.all(Array.from({ length: 40 }, (_, i) => startRun(busy, { i: String(i) })));
    // Every run finished, so its delivery is stored (and was handed to the sender); the first ones hang.
    await until(async () => (await t.admin.listDeliveries(busy.id))?.length === 40, 5_000, "the busy trigger's 40 deliveries");
    await until(() => hanging.received.length >= MAX_IN_FLIGHT_PER_TRIGGER, 2_000, "the busy trigger's attempts");
    const started = Date.now();
    const id = await startRun(quiet, { from: 'quiet' });
    await until(() => fast.received.length === 1, 2_000, "the quiet trigger's callback");
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(fast.received[0].body.toString()).toContain(id);
    // The busy trigger still holds its attempts, no more: its other deliveries wait.
    expect(hanging.received).toHaveLength(MAX_IN_FLIGHT_PER_TRIGGER);
    const pending = (await t.admin.listDeliveries(busy.id))!.filter((d) => d.status === 'pending');
    expect(pending).toHaveLength(40);
  });

  it("holds an account's hanging receivers to its account's places: another account's callback is delivered at once", async () => {
    // Nine triggers of one account, four attempts each, would hold more than the process's 32 places.
    const busy = await Promise.all(Array.from({ length: 9 }, () => withCallbackTo(hanging)));
    const quiet = await withCallbackTo(fast, 'other-echo');
    await Promise.all(busy.flatMap((trigger) => Array.from({ length: 5 }, (_, i) => startRun(trigger, { i: String(i) }))));
    for (const trigger of busy) {
      await until(async () => (await t.admin.listDeliveries(trigger.id))?.length === 5, 5_000, "a busy trigger's 5 deliveries");
    }
    await until(() => hanging.received.length >= MAX_IN_FLIGHT_PER_ACCOUNT, 2_000, "the busy account's attempts");
    const started = Date.now();
    const id = await startRun(quiet, { from: 'quiet' });
    await until(() => fast.received.length === 1, 2_000, "the other account's callback");
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(fast.received[0].body.toString()).toContain(id);
    // The busy account still holds its places, no more: its other 37 deliveries wait, whichever trigger they are of.
    expect(hanging.received).toHaveLength(MAX_IN_FLIGHT_PER_ACCOUNT);
    let pending = 0;
    for (const trigger of busy) pending += (await t.admin.listDeliveries(trigger.id))!.filter((d) => d.status === 'pending').length;
    expect(pending).toBe(45);
  });

  it("lists past a busy trigger's backlog: another trigger's due delivery is taken by the same sweep", async () => {
    const busy = await withCallbackTo(hanging);
    const quiet = await withCallbackTo(fast);
    const store = t.app.get(CallbackStore);
    // Stored elsewhere (an API node, a sender that died): no wake-up here, only a sweep finds them. The busy
    // trigger's 60 are all older than the quiet one's, more than a page of the process's places; all committed
    // at once, so no periodic sweep sees some of them and fills the busy trigger's places first.
    const due = (triggerId: string, ageMs: number, tx: WebhookTransaction) => {
      const at = new Date(Date.now() - ageMs);
      return store.insertDelivery(
        {
          id: newDeliveryId(),
          triggerId,
          invocationId: 'inv_AAAAAAAAAAAAAAAAAAAAAA',
          event: 'invocation.completed',
          msgId: generateMessageId(),
          body: JSON.stringify({ type: 'invocation.completed', triggerId }),
          status: 'pending',
          attempts: 0,
          nextAttemptAt: at,
          lastAttemptAt: null,
          responseStatus: null,
          latencyMs: null,
          lastError: null,
          createdAt: at,
        },
        tx,
      );
    };
    await t.app.get(WebhookUnitOfWork).run(async (tx) => {
      for (let i = 0; i < 60; i++) await due(busy.id, 60_000 - i, tx);
      await due(quiet.id, 1_000, tx);
    });
    const started = Date.now();
    await t.app.get(CallbackDeliveries).sweep();
    await until(() => fast.received.length === 1, 2_000, "the quiet trigger's delivery");
    expect(Date.now() - started).toBeLessThan(2_000); // the next sweep would come only after 5 s
    expect(fast.received[0].body.toString()).toContain(quiet.id);
    await until(() => hanging.received.length === MAX_IN_FLIGHT_PER_TRIGGER, 2_000, "the busy trigger's attempts");
    expect(hanging.received).toHaveLength(MAX_IN_FLIGHT_PER_TRIGGER);
  });
});

describeOnEveryAdapterAndDatabase('callbacks of an app whose bots are all of one account', ({ makeAdapter, database }) => {
  it("keeps every place for that account: nine triggers' hanging receivers hold all 32, not an account's 8", async () => {
    const t = await startWebhookApp(makeAdapter, {
      database,
      options: {
        accounts: { acct: { credits: 10_000 } },
        rateLimits: UNTHROTTLED,
        callbackAllowedHosts: ['127.0.0.1'],
        callbackRetryScheduleMs: [0, 60_000],
      },
    });
    const hanging = await startCallbackReceiver();
    hanging.respond(() => undefined);
    try {
      const triggers = await Promise.all(
        Array.from({ length: 9 }, async () => {
          const trigger = await createTrigger(t, 'echo');
          await t.admin.setCallback(trigger.id, { url: `${hanging.origin}/hooks` });
          return trigger;
        }),
      );
      await Promise.all(triggers.flatMap((trigger) => Array.from({ length: 5 }, (_, i) => startRun(trigger, { i: String(i) }))));
      await until(() => hanging.received.length === 32, 5_000, 'all 32 places taken');
      expect(MAX_IN_FLIGHT_PER_ACCOUNT).toBeLessThan(32);
    } finally {
      for (const trigger of await t.admin.listTriggers('echo')) await t.admin.deleteCallback(trigger.id);
      await hanging.close();
      await t.close();
    }
  });
});

describe('callbacks without keySecret', () => {
  let t: WebhookTestApp;
  let receiver: CallbackReceiver;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    t = await startWebhookApp(() => undefined, {
      options: { accounts: { acct: { credits: 100 } }, callbackAllowedHosts: ['127.0.0.1'] },
      imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [TestAdminGuard] })],
    });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it('shows the secret only when it is set or rotated, and still signs with it', async () => {
    const api = `${t.baseUrl}/admin/api`;
    const trigger = await createTrigger(t, 'echo');
    const set = await send('PUT', `${api}/triggers/${trigger.id}/callback`, { headers: AUTH, json: { url: `${receiver.origin}/r` } });
    expect(set.body.secret).toMatch(/^whsec_/);
    expect((await send('GET', `${api}/triggers/${trigger.id}/callback`, { headers: AUTH })).body).toMatchObject({
      secret: null,
      enabled: true,
    });
    const again = await send('PUT', `${api}/triggers/${trigger.id}/callback`, { headers: AUTH, json: { url: `${receiver.origin}/r2` } });
    expect(again.body.secret).toBeNull(); // unchanged, and not shown again
    const rotated = await send('POST', `${api}/triggers/${trigger.id}/callback/rotate-secret`, { headers: AUTH });
    expect(rotated.body.secret).toMatch(/^whsec_/);
    await startRun(trigger, { k: 'v' });
    await until(() => receiver.received.length === 1, 5_000, 'the callback');
    expect(receiver.received[0].path).toBe('/r2');
    expect(verifyWebhookSignature(rotated.body.secret as string, receiver.received[0].headers, receiver.received[0].body)).toMatchObject({
      type: 'invocation.completed',
    });
  });

  it('deletes finished deliveries with the runs they reported (historyRetentionDays)', async () => {
    const trigger = (await t.admin.listTriggers('echo'))[0];
    await until(async () => (await t.admin.listDeliveries(trigger.id))?.[0]?.status === 'delivered', 2_000, 'delivered');
    await t.app.get(HistoryRetention).sweep(Date.now() + 31 * 24 * 60 * 60 * 1000);
    expect(await t.admin.listDeliveries(trigger.id)).toEqual([]);
  });
});

/** A host's own storage, a class with its own dependencies (none here), bound by the module with useClass. */
@Injectable()
class HostStorage extends InMemoryWebhookStorage {}

describe("callbacks with the host's own storage (the storage extra)", () => {
  let t: WebhookTestApp;
  let receiver: CallbackReceiver;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    t = await startWebhookApp(() => undefined, {
      options: {
        accounts: { acct: { credits: 100 } },
        callbackAllowedHosts: ['127.0.0.1'],
        // Extras go into forRoot({...}) beside the options, as a host writes them.
        ...({ storage: HostStorage } satisfies WebhookTriggerModuleExtras as WebhookTriggerModuleOptions),
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it("stores the completion with the run's final change in the host's storage, and delivers it", async () => {
    const trigger = await createTrigger(t, 'echo');
    const callback = await t.admin.setCallback(trigger.id, { url: `${receiver.origin}/host` });
    const id = await startRun(trigger, { from: 'host stores' });
    await until(() => receiver.received.length === 1, 5_000, 'the callback');
    const body = verifyWebhookSignature<Body>(callback!.secret!, receiver.received[0].headers, receiver.received[0].body);
    expect(body.data.invocation).toMatchObject({ id, status: 'succeeded', outputs: [{ title: 'from', message: 'host stores' }] });
    // Everything went to the host's storage: the run, the callback and its delivery.
    const storage = t.app.get<WebhookStorage, HostStorage>(WebhookStorage);
    expect(storage).toBeInstanceOf(HostStorage);
    expect((await storage.invocations.findById(id))?.status).toBe('succeeded');
    await until(async () => (await storage.callbacks.listByInvocation(id))[0]?.status === 'delivered', 2_000, 'the delivery recorded');
    expect(await storage.callbacks.listByInvocation(id)).toEqual([expect.objectContaining({ event: 'invocation.completed', attempts: 1 })]);
  });
});
