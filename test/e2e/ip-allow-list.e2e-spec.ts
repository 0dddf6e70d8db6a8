/**
 * A trigger's IP allow-list over real HTTP (docs/security.md "IP allow-lists"): judged on the address the host
 * trusts (`request.ip`, as its trust-proxy setting makes it), refused with 403 before the key, the rate limits
 * and the body; set and cleared through the admin API, every entry checked.
 */
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { WebhookTriggerAdminModule } from '../../src/index.js';
import { ADMIN_TEST_TOKEN, TestAdminGuard } from '../fixtures/admin-guard.js';
import { expectAdminError, expectError, send, triggerBot } from '../helpers/http.js';
import { ADAPTERS, createTrigger, startWebhookApp, type TestTrigger, type WebhookTestApp } from '../helpers/webhook-app.js';

const AUTH = { Authorization: `Bearer ${ADMIN_TEST_TOKEN}` };
const admin = WebhookTriggerAdminModule.forRoot({ path: 'admin', guards: [TestAdminGuard] });

describe.each(ADAPTERS)('IP allow-lists on %s', (adapterName, makeAdapter) => {
  describe('without a trusted proxy (the socket address decides; X-Forwarded-For is ignored)', () => {
    let t: WebhookTestApp;
    let api: string;
    const putIps = (id: string, json: unknown) => send('PUT', `${api}/triggers/${id}/allowed-ips`, { headers: AUTH, json });

    beforeAll(async () => {
      t = await startWebhookApp(makeAdapter, { options: { accounts: { acct: { credits: 1000 } } }, imports: [admin] });
      api = `${t.baseUrl}/admin/api`;
    });
    afterAll(() => t.close());

    it('lets every address in until a list is set, then only the listed ones', async () => {
      const trigger = await createTrigger(t);
      expect((await triggerBot(trigger, { n: 1 })).status).toBe(200);

      expect(await putIps(trigger.id, { allowedIps: ['203.0.113.0/24', '2001:db8::/32'] })).toMatchObject({
        status: 200,
        body: { allowedIps: ['203.0.113.0/24', '2001:db8::/32'] },
      });
      // The list applies to the very next request (this node's trigger cache dropped its copy before the answer).
      const refused = await triggerBot(trigger, { n: 2 }, { headers: { 'X-Forwarded-For': '203.0.113.5' } });
      expectError(refused, 403);
      expect(refused.body.message).toBe('This trigger does not accept requests from 127.0.0.1');

      expect((await putIps(trigger.id, { allowedIps: ['127.0.0.0/8'] })).status).toBe(200);
      expect((await triggerBot(trigger, { n: 3 })).status).toBe(200);
      expect((await putIps(trigger.id, { allowedIps: ['::ffff:127.0.0.1'] })).status).toBe(200);
      expect((await triggerBot(trigger, { n: 4 })).status).toBe(200);

      expect((await putIps(trigger.id, { allowedIps: [] })).body).toEqual({ allowedIps: [] });
      expect((await triggerBot(trigger, { n: 5 })).status).toBe(200);
    });

    it('refuses before the key is judged: a wrong key from a refused address is a 403, not a 401', async () => {
      const trigger = await createTrigger(t);
      await t.admin.setAllowedIps(trigger.id, ['198.51.100.0/24']);
      expectError(await triggerBot(trigger, {}, { key: 'whk_wrong' }), 403);
      expectError(await triggerBot(trigger, {}, { key: null }), 403);
    });

    it("shows the list in the trigger's view", async () => {
      const trigger = await createTrigger(t);
      await putIps(trigger.id, { allowedIps: ['198.51.100.7', '2001:db8::/32'] });
      const viewed = await send('GET', `${api}/triggers/${trigger.id}`, { headers: AUTH });
      expect(viewed.body.allowedIps).toEqual(['198.51.100.7', '2001:db8::/32']);
    });

    it.each([
      ['a prefix too long for IPv4', { allowedIps: ['10.0.0.0/8', '10.0.0.0/33'] }, '"10.0.0.0/33" is not an IPv4 or IPv6 address or CIDR'],
      ['a prefix too long for IPv6', { allowedIps: ['2001:db8::/129'] }, '"2001:db8::/129"'],
      ['a host name', { allowedIps: ['example.com'] }, '"example.com"'],
      ['a number', { allowedIps: [42] }, '"42"'],
      ['a string for the list', { allowedIps: '10.0.0.1' }, 'allowedIps must be a list of at most 100'],
      ['101 entries', { allowedIps: Array.from({ length: 101 }, (_, i) => `10.0.${i}.1`) }, 'allowedIps must be a list of at most 100'],
      ['no list', {}, 'allowedIps must be a list'],
      ['a bare array body', ['10.0.0.1'], 'JSON object'],
    ])('refuses %s with a 400 naming the problem, storing nothing', async (_case, body, message) => {
      const trigger = await createTrigger(t);
      await t.admin.setAllowedIps(trigger.id, ['192.0.2.1']);
      const res = await putIps(trigger.id, body);
      expectAdminError(res, 400);
      expect(res.body.message).toContain(message);
      expect((await t.admin.viewTrigger(trigger.id))?.allowedIps).toEqual(['192.0.2.1']);
    });

    it('answers 404 for an unknown trigger', async () => {
      expectAdminError(await putIps('trg_AAAAAAAAAAAAAAAA', { allowedIps: [] }), 404);
    });
  });

  describe('behind a trusted proxy (the host trusts loopback: X-Forwarded-For decides)', () => {
    let t: WebhookTestApp;
    let trigger: TestTrigger;
    const from = (ip: string, inputs: unknown = {}) => triggerBot(trigger, inputs, { headers: { 'X-Forwarded-For': ip } });

    beforeAll(async () => {
      // Each adapter's own way to trust the proxy: Express's `trust proxy` setting, Fastify's `trustProxy` option.
      t = await startWebhookApp(adapterName === 'fastify' ? () => new FastifyAdapter({ trustProxy: '127.0.0.1' }) : makeAdapter, {
        options: {
          accounts: { acct: { credits: 1000 } },
          rateLimits: { perTrigger: { limit: 2, ttlMs: 60_000 }, perAccount: { limit: 1_000, ttlMs: 60_000 } },
          failedKeyLimit: { limit: 1, ttlMs: 60_000 },
        },
        configure: (app) => {
          if (adapterName === 'express')
            (app.getHttpAdapter().getInstance() as { set: (k: string, v: unknown) => void }).set('trust proxy', 'loopback');
        },
      });
      trigger = await createTrigger(t);
      await t.admin.setAllowedIps(trigger.id, ['203.0.113.0/24', '2001:db8::/32']);
    });
    afterAll(() => t.close());

    it('judges the client the proxy names; a refused address spends no rate-limit budget and counts no failed key', async () => {
      for (const ip of ['198.51.100.1', '127.0.0.1', '2001:db9::1']) {
        const res = await from(ip);
        expectError(res, 403);
        expect(res.body.message).toBe(`This trigger does not accept requests from ${ip}`);
      }
      // A wrong key from a refused address is not a failed key (failedKeyLimit is 1): the listed client still gets in.
      expectError(await triggerBot(trigger, {}, { key: 'whk_wrong', headers: { 'X-Forwarded-For': '198.51.100.1' } }), 403);
      // The trigger's limit is 2 a minute: the refusals above spent none of it.
      expect((await from('203.0.113.5', { n: 1 })).status).toBe(200);
      expect((await from('2001:db8::5', { n: 2 })).status).toBe(200);
      expectError(await from('203.0.113.6', { n: 3 }), 429);
    });
  });
});
