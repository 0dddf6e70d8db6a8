/**
 * Signed requests (docs/security.md, "Signed requests"): a trigger's `requestSigning` mode, verified against the
 * `standardwebhooks` package as the SENDER: a request it signs passes; a changed body, a wrong or retired secret,
 * a stale timestamp or a replayed webhook-id get 401 saying which check failed, with nothing stored or charged;
 * `with-key` needs X-Key too, `instead-of-key` does not; a rotated secret keeps working for the grace period of the
 * module's clock, then stops. And the admin API routes that set all this, with their 400 and 404.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { WebhookTriggerAdminModule } from '../../src/index.js';
import {
  INVALID_KEY,
  MISSING_KEY,
  SIGNED_REQUEST_HEADERS_MISSING,
  SIGNED_REQUEST_REPLAYED,
  SIGNED_REQUEST_SIGNATURE_MISMATCH,
  SIGNED_REQUEST_TIMESTAMP_OUTSIDE_WINDOW,
} from '../../src/errors/webhook-trigger.messages.js';
import type { RequestSigning } from '../../src/persistence/records.js';
import { ADMIN_TEST_TOKEN, TestAdminGuard } from '../fixtures/admin-guard.js';
import { ManualClock } from '../fakes/manual-clock.js';
import { storedCredits, storedInvocations } from '../helpers/db.js';
import { expectAdminError, expectError, getStatus, send, triggerBot, type HttpResult } from '../helpers/http.js';
import {
  createTrigger,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  type TestTrigger,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';

const ACCOUNT = 'acct';
const GRACE_MS = 60 * 60 * 1000;
const AUTH = { Authorization: `Bearer ${ADMIN_TEST_TOKEN}` };

describeOnEveryAdapterAndDatabase('signed requests', ({ makeAdapter, database }) => {
  // The module's Clock: timestamps are judged against it, and the rotation grace passes on it.
  const clock = new ManualClock(Date.parse('2026-03-01T12:00:00Z'));
  let t: WebhookTestApp;
  let api: string;

  beforeAll(async () => {
    t = await startWebhookApp(makeAdapter, {
      database,
      options: {
        keyRotationGraceMs: GRACE_MS,
        // Three runs per trigger per minute: enough for each test, and small enough to show who is counted.
        rateLimits: { perTrigger: { limit: 3, ttlMs: 60_000 }, perAccount: { limit: 10_000, ttlMs: 60_000 } },
        failedKeyLimit: { limit: 10_000, ttlMs: 60_000 },
      },
      extras: { clock },
      imports: [WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [TestAdminGuard] })],
    });
    api = `${t.baseUrl}/admin/api`;
    await t.admin.setCredits(ACCOUNT, 1000);
  });
  afterAll(() => t.close());

  /** A trigger in `mode` with one signing secret (the standardwebhooks sender gets it), made through the admin API. */
  async function signedTrigger(mode: RequestSigning): Promise<{ trigger: TestTrigger; secret: string }> {
    const trigger = await createTrigger(t, 'echo', `signed ${mode}`);
    expect((await send('PUT', `${api}/triggers/${trigger.id}/signing`, { headers: AUTH, json: { mode } })).body.mode).toBe(mode);
    const rotated = await send('POST', `${api}/triggers/${trigger.id}/signing/secrets`, { headers: AUTH });
    expect(rotated.status).toBe(201);
    return { trigger, secret: rotated.body.secret as string };
  }

  interface Signed {
    body?: string;
    /** Sent instead of the signed body (a body changed on the way). */
    sentBody?: string;
    msgId?: string;
    /** Seconds from the module's clock. */
    skewSec?: number;
    key?: string | null;
  }

  /** POSTs to the trigger as a Standard Webhooks sender does: `standardwebhooks`' Webhook.sign over the exact bytes. */
  function sendSigned(trigger: TestTrigger, secret: string, s: Signed = {}): Promise<HttpResult> {
    const body = s.body ?? JSON.stringify({ n: randomBytes(4).toString('hex') });
    const msgId = s.msgId ?? `msg_${randomBytes(12).toString('hex')}`;
    const sentAt = new Date(clock.now() + (s.skewSec ?? 0) * 1000);
    const headers = {
      'webhook-id': msgId,
      'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(msgId, sentAt, body),
    };
    return triggerBot(trigger, undefined, { raw: s.sentBody ?? body, headers, key: s.key === undefined ? null : s.key });
  }

  /** 401 with exactly `message`, and nothing stored or charged for the trigger. */
  async function expectRefused(res: HttpResult, trigger: TestTrigger, message: string, runsBefore = 0): Promise<void> {
    expectError(res, 401);
    expect(res.body.message).toBe(message);
    expect(await storedInvocations(t.store, trigger.id)).toHaveLength(runsBefore);
  }

  describe('instead-of-key: the signature is the credential', () => {
    it('accepts a request the standardwebhooks package signed, without X-Key, and runs it with its body', async () => {
      const { trigger, secret } = await signedTrigger('instead-of-key');
      const res = await sendSigned(trigger, secret, { body: '{"city":"Lyon"}' });
      expect(res.status).toBe(200);
      expect(await storedInvocations(t.store, trigger.id)).toHaveLength(1);
      expect((await t.admin.getInvocationDetail(res.body.invocation.id as string, { showInputs: true }))?.inputs).toEqual({ city: 'Lyon' });
    });

    it('refuses a changed body, a wrong secret and a secret of another trigger: "does not match", nothing stored or charged', async () => {
      const { trigger, secret } = await signedTrigger('instead-of-key');
      const { secret: otherTriggers } = await signedTrigger('instead-of-key');
      const credits = await storedCredits(t.store, ACCOUNT);
      await expectRefused(
        await sendSigned(trigger, secret, { body: '{"amount":1}', sentBody: '{"amount":1000}' }),
        trigger,
        SIGNED_REQUEST_SIGNATURE_MISMATCH,
      );
      const wrong = 'whsec_' + randomBytes(32).toString('base64');
      await expectRefused(await sendSigned(trigger, wrong), trigger, SIGNED_REQUEST_SIGNATURE_MISMATCH);
      await expectRefused(await sendSigned(trigger, otherTriggers), trigger, SIGNED_REQUEST_SIGNATURE_MISMATCH);
      expect(await storedCredits(t.store, ACCOUNT)).toBe(credits);
    });

    it('refuses a timestamp more than 5 minutes off either way, saying so; 5 minutes exactly still passes', async () => {
      const { trigger, secret } = await signedTrigger('instead-of-key');
      await expectRefused(await sendSigned(trigger, secret, { skewSec: -301 }), trigger, SIGNED_REQUEST_TIMESTAMP_OUTSIDE_WINDOW(301, 300));
      await expectRefused(await sendSigned(trigger, secret, { skewSec: 360 }), trigger, SIGNED_REQUEST_TIMESTAMP_OUTSIDE_WINDOW(360, 300));
      expect((await sendSigned(trigger, secret, { skewSec: -300 })).status).toBe(200);
    });

    it('refuses a replayed webhook-id (the exact same request again) once the first was accepted', async () => {
      const { trigger, secret } = await signedTrigger('instead-of-key');
      const first = await sendSigned(trigger, secret, { msgId: 'msg_replayed', body: '{"a":1}' });
      expect(first.status).toBe(200);
      await expectRefused(
        await sendSigned(trigger, secret, { msgId: 'msg_replayed', body: '{"a":1}' }),
        trigger,
        SIGNED_REQUEST_REPLAYED(600),
        1,
      );
      // The same id on another trigger is another message.
      const { trigger: other, secret: otherSecret } = await signedTrigger('instead-of-key');
      expect((await sendSigned(other, otherSecret, { msgId: 'msg_replayed' })).status).toBe(200);
    });

    it("a run refused for credits (402) gives its webhook-id back: the sender's retry with the same id runs once funded", async () => {
      const { trigger, secret } = await signedTrigger('instead-of-key');
      await t.admin.setCredits(ACCOUNT, 0);
      try {
        const refused = await sendSigned(trigger, secret, { msgId: 'msg_retried', body: '{"a":1}' });
        expectError(refused, 402);
        expect(await storedInvocations(t.store, trigger.id)).toHaveLength(0);
        await t.admin.setCredits(ACCOUNT, 1000);
        const retried = await sendSigned(trigger, secret, { msgId: 'msg_retried', body: '{"a":1}' });
        expect(retried.status).toBe(200);
        expect(await storedInvocations(t.store, trigger.id)).toHaveLength(1);
        // Accepted now, the id is spent: the same message again is a replay.
        await expectRefused(
          await sendSigned(trigger, secret, { msgId: 'msg_retried', body: '{"a":1}' }),
          trigger,
          SIGNED_REQUEST_REPLAYED(600),
          1,
        );
      } finally {
        await t.admin.setCredits(ACCOUNT, 1000);
      }
    });

    it('a forged signature does not spend the webhook-id: the real message with that id still passes', async () => {
      const { trigger, secret } = await signedTrigger('instead-of-key');
      const forged = 'whsec_' + randomBytes(32).toString('base64');
      await expectRefused(await sendSigned(trigger, forged, { msgId: 'msg_wanted' }), trigger, SIGNED_REQUEST_SIGNATURE_MISMATCH);
      expect((await sendSigned(trigger, secret, { msgId: 'msg_wanted' })).status).toBe(200);
    });

    it('refuses X-Key alone (a leaked key is not enough) and names the missing headers', async () => {
      const { trigger } = await signedTrigger('instead-of-key');
      await expectRefused(
        await triggerBot(trigger, { a: 1 }),
        trigger,
        SIGNED_REQUEST_HEADERS_MISSING(['webhook-id', 'webhook-timestamp', 'webhook-signature']),
      );
      await expectRefused(
        await triggerBot(trigger, { a: 1 }, { key: null, headers: { 'webhook-id': 'msg_1' } }),
        trigger,
        SIGNED_REQUEST_HEADERS_MISSING(['webhook-timestamp', 'webhook-signature']),
      );
    });

    it("counts only verified requests in the trigger's rate limit: forged ones spend nothing of it", async () => {
      const { trigger, secret } = await signedTrigger('instead-of-key');
      const forged = 'whsec_' + randomBytes(32).toString('base64');
      for (let i = 0; i < 5; i++) expectError(await sendSigned(trigger, forged), 401);
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push((await sendSigned(trigger, secret)).status);
      expect(answers).toEqual([200, 200, 200, 429]);
    });

    it("the run's other routes (status) still ask for X-Key", async () => {
      const { trigger, secret } = await signedTrigger('instead-of-key');
      const res = await sendSigned(trigger, secret);
      const id = res.body.invocation.id as string;
      expectError(await getStatus(trigger, id, null), 401);
      expect((await getStatus(trigger, id)).status).toBe(200);
    });
  });

  describe('with-key: X-Key and a signature, both', () => {
    it('needs both: a signature without X-Key → 401 (key), X-Key without a signature → 401 (headers), both → 200', async () => {
      const { trigger, secret } = await signedTrigger('with-key');
      await expectRefused(await sendSigned(trigger, secret), trigger, MISSING_KEY);
      await expectRefused(await sendSigned(trigger, secret, { key: 'whk_wrong' }), trigger, INVALID_KEY);
      await expectRefused(
        await triggerBot(trigger, { a: 1 }),
        trigger,
        SIGNED_REQUEST_HEADERS_MISSING(['webhook-id', 'webhook-timestamp', 'webhook-signature']),
      );
      await expectRefused(
        await sendSigned(trigger, secret, { key: trigger.key, body: '{"a":1}', sentBody: '{"a":2}' }),
        trigger,
        SIGNED_REQUEST_SIGNATURE_MISMATCH,
      );
      expect((await sendSigned(trigger, secret, { key: trigger.key })).status).toBe(200);
    });

    it("tells a wrong key nothing of the trigger's signing: the X-Key 401, whatever the signature headers say", async () => {
      const { trigger } = await signedTrigger('with-key');
      await expectRefused(await triggerBot(trigger, { a: 1 }, { key: 'whk_wrong' }), trigger, INVALID_KEY);
      const stale = {
        'webhook-id': 'msg_1',
        'webhook-timestamp': String(Math.floor(clock.now() / 1000) - 3600),
        'webhook-signature': 'v1,x',
      };
      await expectRefused(await triggerBot(trigger, { a: 1 }, { key: 'whk_wrong', headers: stale }), trigger, INVALID_KEY);
    });
  });

  describe('off (the default)', () => {
    it('asks X-Key only, whatever signature headers come with it', async () => {
      const trigger = await createTrigger(t, 'echo', 'unsigned');
      expect((await send('GET', `${api}/triggers/${trigger.id}/signing`, { headers: AUTH })).body).toEqual({ mode: 'off', secrets: [] });
      expect((await triggerBot(trigger, { a: 1 }, { headers: { 'webhook-id': 'x', 'webhook-signature': 'v1,nonsense' } })).status).toBe(
        200,
      );
    });
  });

  describe('rotation and revocation', () => {
    it('a rotated secret keeps working until the grace ends on the module clock, then is refused; the new one works', async () => {
      const { trigger, secret: old } = await signedTrigger('instead-of-key');
      clock.advance(1000); // the new secret is the newer one in the list
      const rotated = await send('POST', `${api}/triggers/${trigger.id}/signing/secrets`, { headers: AUTH });
      const fresh = rotated.body.secret as string;
      expect(fresh).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(rotated.body.signing.secrets.map((s: { status: string }) => s.status)).toEqual(['active', 'expiring']);
      const graceEnds = Date.parse(rotated.body.signing.secrets[1].expiresAt as string);
      expect(graceEnds).toBe(clock.now() + GRACE_MS);
      expect((await sendSigned(trigger, old)).status).toBe(200);
      clock.set(graceEnds - 1000);
      expect((await sendSigned(trigger, old)).status).toBe(200);
      clock.set(graceEnds);
      await expectRefused(await sendSigned(trigger, old), trigger, SIGNED_REQUEST_SIGNATURE_MISMATCH, 2);
      expect((await sendSigned(trigger, fresh)).status).toBe(200);
      const listed = await send('GET', `${api}/triggers/${trigger.id}/signing`, { headers: AUTH });
      expect(listed.body.secrets.map((s: { status: string }) => s.status)).toEqual(['active', 'expired']);
      expect(JSON.stringify(listed.body)).not.toContain('whsec_');
    });

    it('a revoked secret is refused at once, grace or not', async () => {
      const { trigger, secret } = await signedTrigger('instead-of-key');
      const view = await send('GET', `${api}/triggers/${trigger.id}/signing`, { headers: AUTH });
      const id = view.body.secrets[0].id as string;
      const revoked = await send('POST', `${api}/triggers/${trigger.id}/signing/secrets/${id}/revoke`, { headers: AUTH });
      expect(revoked.status).toBe(200);
      expect(revoked.body.secrets[0]).toMatchObject({ id, status: 'revoked', revokedAt: new Date(clock.now()).toISOString() });
      await expectRefused(await sendSigned(trigger, secret), trigger, SIGNED_REQUEST_SIGNATURE_MISMATCH);
    });
  });

  describe('admin API: 400 and 404 as JSON', () => {
    it('refuses an unknown mode (400), an unknown trigger (404) and an unknown or revoked secret (404)', async () => {
      const { trigger } = await signedTrigger('with-key');
      const bad = await send('PUT', `${api}/triggers/${trigger.id}/signing`, { headers: AUTH, json: { mode: 'sometimes' } });
      expectAdminError(bad, 400);
      expect(bad.body.message).toBe('requestSigning must be one of off, with-key, instead-of-key');
      expectAdminError(await send('PUT', `${api}/triggers/${trigger.id}/signing`, { headers: AUTH, json: ['with-key'] }), 400);
      expect((await t.admin.getRequestSigning(trigger.id))?.mode).toBe('with-key');
      const unknown = 'trg_AAAAAAAAAAAAAAAA';
      expectAdminError(await send('GET', `${api}/triggers/${unknown}/signing`, { headers: AUTH }), 404);
      expectAdminError(await send('PUT', `${api}/triggers/${unknown}/signing`, { headers: AUTH, json: { mode: 'off' } }), 404);
      expectAdminError(await send('POST', `${api}/triggers/${unknown}/signing/secrets`, { headers: AUTH }), 404);
      expectAdminError(await send('POST', `${api}/triggers/${trigger.id}/signing/secrets/sgs_nope/revoke`, { headers: AUTH }), 404);
      const id = (await t.admin.getRequestSigning(trigger.id))!.secrets[0].id;
      expect((await send('POST', `${api}/triggers/${trigger.id}/signing/secrets/${id}/revoke`, { headers: AUTH })).status).toBe(200);
      expectAdminError(await send('POST', `${api}/triggers/${trigger.id}/signing/secrets/${id}/revoke`, { headers: AUTH }), 404);
    });
  });
});
