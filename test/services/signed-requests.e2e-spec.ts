/**
 * Signed requests across nodes (docs/security.md, "Signed requests"): two API apps on one PostgreSQL database and
 * one Redis (RedisRateLimitStorage remembers webhook-ids, RedisClusterBus carries trigger changes). A request
 * signed by the standardwebhooks package and accepted on node A is refused on node B as a replay; a mode set and
 * a secret revoked on A hold on B at once.
 */
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { SIGNED_REQUEST_REPLAYED, SIGNED_REQUEST_SIGNATURE_MISMATCH } from '../../src/errors/webhook-trigger.messages.js';
import { WebhookTriggerModule, WebhookTriggersAdmin } from '../../src/index.js';
import { RedisClusterBus, RedisRateLimitStorage } from '../../src/redis/index.js';
import { EchoBot } from '../fixtures/bots.js';
import { request, until, type HttpResult } from '../helpers/http.js';
import { createScratchDatabase, deleteRedisKeys, serviceUrl } from '../helpers/services.js';

const redisUrl = serviceUrl('WEBHOOK_TEST_REDIS_URL');
const postgresUrl = serviceUrl('WEBHOOK_TEST_POSTGRES_URL');
/** Fresh per run, so parallel runs on the same Redis never see each other's webhook-ids. */
const keyPrefix = `webhook-test-${randomBytes(6).toString('hex')}:`;

if (!redisUrl || !postgresUrl) {
  it.todo(
    'Signed requests across nodes NOT RUN: set WEBHOOK_TEST_REDIS_URL=redis://127.0.0.1:6379 and WEBHOOK_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test',
  );
} else {
  describe('signed requests across two API nodes (one PostgreSQL, one Redis)', () => {
    let db: { url: string; drop: () => Promise<void> };
    const apps: INestApplication[] = [];
    const urls: string[] = [];
    let admin: WebhookTriggersAdmin;

    beforeAll(async () => {
      db = await createScratchDatabase(postgresUrl);
      for (let i = 0; i < 2; i++) {
        const moduleRef = await Test.createTestingModule({
          imports: [
            WebhookTriggerModule.forRoot({
              database: { type: 'postgres', url: db.url },
              redis: { url: redisUrl, keyPrefix },
              rateLimits: { perTrigger: { limit: 10_000, ttlMs: 1000 }, perAccount: { limit: 10_000, ttlMs: 60_000 } },
              failedKeyLimit: { limit: 10_000, ttlMs: 60_000 },
              shutdownGraceMs: 0,
              rateLimitStorage: RedisRateLimitStorage,
              clusterBus: RedisClusterBus,
            }),
          ],
          providers: [EchoBot],
        }).compile();
        const app = moduleRef.createNestApplication({ logger: false });
        await app.listen(0, '127.0.0.1');
        apps.push(app);
        urls.push((await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1'));
      }
      admin = apps[0].get(WebhookTriggersAdmin);
      await admin.setCredits('acct', 1_000);
    });

    afterAll(async () => {
      for (const app of apps) await app.close();
      await db?.drop();
      await deleteRedisKeys(redisUrl, keyPrefix);
    });

    /** One signed request (the standardwebhooks package as the sender), to send as is to either node. */
    function signedRequest(secret: string, body = JSON.stringify({ n: randomBytes(4).toString('hex') })) {
      const msgId = `msg_${randomBytes(12).toString('hex')}`;
      const now = new Date();
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'webhook-id': msgId,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': new Webhook(secret).sign(msgId, now, body),
        },
      };
    }
    const sendTo = (node: number, triggerId: string, r: { body: string; headers: Record<string, string> }): Promise<HttpResult> =>
      request(`${urls[node]}/webhooks/${triggerId}/trigger`, { method: 'POST', headers: r.headers, body: r.body });

    it('a request accepted on node A is refused on node B as a replay (the webhook-id is remembered in Redis)', async () => {
      const t = await admin.createTrigger('echo', { name: 'replayed' });
      await admin.setRequestSigning(t.id, 'instead-of-key');
      const { secret } = (await admin.rotateSigningSecret(t.id))!;
      const signed = signedRequest(secret);
      expect((await sendTo(0, t.id, signed)).status).toBe(200);
      const replay = await sendTo(1, t.id, signed);
      expect({ status: replay.status, message: replay.body.message }).toEqual({ status: 401, message: SIGNED_REQUEST_REPLAYED(600) });
      expect((await sendTo(0, t.id, signed)).status).toBe(401);
      // A fresh message is fine on either node.
      expect((await sendTo(1, t.id, signedRequest(secret))).status).toBe(200);
    });

    it('of the same signed request sent to both nodes at once, exactly one is accepted', async () => {
      const t = await admin.createTrigger('echo', { name: 'raced' });
      await admin.setRequestSigning(t.id, 'instead-of-key');
      const { secret } = (await admin.rotateSigningSecret(t.id))!;
      const signed = signedRequest(secret);
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => sendTo(i % 2, t.id, signed)));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401, 401, 401, 401]);
      expect((await admin.listInvocations('echo', {})).filter((r) => r.triggerId === t.id)).toHaveLength(1);
    });

    it('a mode set on A holds on B once the bus carries it (B had the trigger cached); a secret revoked on A is refused on B at once', async () => {
      const t = await admin.createTrigger('echo', { name: 'changed' });
      const keyed = (node: number) =>
        request(`${urls[node]}/webhooks/${t.id}/trigger`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-key': t.key },
          body: '{}',
        });
      expect((await keyed(1)).status).toBe(200); // B caches the trigger, mode off
      const { secret, id } = (await admin.rotateSigningSecret(t.id))!;
      await admin.setRequestSigning(t.id, 'instead-of-key');
      // The mode rides on B's cached trigger, dropped when RedisClusterBus carries the change (as a rotated key).
      await until(async () => (await keyed(1)).status === 401, 1000, 'B to ask for a signature');
      expect((await sendTo(1, t.id, signedRequest(secret))).status).toBe(200);
      await admin.revokeSigningSecret(t.id, id);
      const refused = await sendTo(1, t.id, signedRequest(secret));
      expect({ status: refused.status, message: refused.body.message }).toEqual({
        status: 401,
        message: SIGNED_REQUEST_SIGNATURE_MISMATCH,
      });
    });
  });
}
