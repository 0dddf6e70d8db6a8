import { ClusterBus, type RunChange } from '../../cluster/cluster-bus.js';
import { WebhookAdminInputError } from '../../errors/webhook-trigger.errors.js';
import { BAD_ADMIN_FIELD } from '../../errors/webhook-trigger.messages.js';
import { INVOCATION_STATUSES } from '../../persistence/records.js';
import { type AdminServicesApp, startAdminServices } from '../../../test/helpers/admin-services.js';
import type { HistoryFilter } from '../admin-views.js';

describe('AdminRunHistory', () => {
  let a: AdminServicesApp;

  beforeEach(async () => {
    a = await startAdminServices();
  });
  afterEach(() => a.t.close());

  const base = { triggerId: 'trg_AAAAAAAAAAAAAAAA', botId: 'weather', accountId: 'acme', inputs: { secret: 'input' }, credits: 3 };
  const none = { idempotencyKey: null, requestHash: null };

  describe('listInvocations', () => {
    it("lists a bot's runs newest first with their duration, up to the limit", async () => {
      const t0 = Date.now() - 60_000;
      await a.invocationRows.insert({ id: 'inv_old', ...base, ...none, createdAt: new Date(t0) });
      await a.invocationRows.insert({ id: 'inv_new', ...base, ...none, createdAt: new Date(t0 + 1000) });
      await a.invocationRows.markRunning('inv_old', new Date(t0 + 100), 'w', new Date(Date.now() + 600_000));
      await a.invocationRows.transition('inv_old', 'running', 'succeeded', {
        finishedAt: new Date(t0 + 350),
        outputs: [{ title: 't', message: 'm' }],
        error: null,
      });
      const list = await a.history.listInvocations('weather');
      expect(list).toEqual([
        {
          id: 'inv_new',
          triggerId: base.triggerId,
          botId: 'weather',
          status: 'queued',
          credits: 3,
          createdAt: new Date(t0 + 1000),
          startedAt: null,
          finishedAt: null,
          durationMs: null,
          outputs: null,
          outputsTruncated: false,
          errorTruncated: false,
          error: null,
          triggerName: null,
          idempotencyKey: null,
        },
        {
          id: 'inv_old',
          triggerId: base.triggerId,
          botId: 'weather',
          status: 'succeeded',
          credits: 3,
          createdAt: new Date(t0),
          startedAt: new Date(t0 + 100),
          finishedAt: new Date(t0 + 350),
          durationMs: 250,
          outputs: [{ title: 't', message: 'm' }],
          outputsTruncated: false,
          errorTruncated: false,
          error: null,
          triggerName: null,
          idempotencyKey: null,
        },
      ]);
      expect((await a.history.listInvocations('weather', { limit: 1 })).map((i) => i.id)).toEqual(['inv_new']);
      expect(await a.history.listInvocations('other')).toEqual([]);
    });

    it.each<[string, unknown, string]>([
      ['a bare number (the older signature)', 5, BAD_ADMIN_FIELD('filter', 'an object such as { limit: 50 }')],
      ['a limit of 0', { limit: 0 }, BAD_ADMIN_FIELD('limit', 'a whole number from 1 to 1000')],
      ['a limit over 1000', { limit: 1001 }, BAD_ADMIN_FIELD('limit', 'a whole number from 1 to 1000')],
      ['a fractional limit', { limit: 2.5 }, BAD_ADMIN_FIELD('limit', 'a whole number from 1 to 1000')],
      ['an unknown status', { status: 'done' }, BAD_ADMIN_FIELD('status', `one of ${INVOCATION_STATUSES.join(', ')}`)],
      ['an invalid time', { from: new Date(NaN) }, BAD_ADMIN_FIELD('from', 'an ISO 8601 time')],
      [
        'a cursor of no run of this bot',
        { before: 'inv_AAAAAAAAAAAAAAAAAAAAAA' },
        BAD_ADMIN_FIELD('before', "the id of one of this bot's runs (the last run of the previous page)"),
      ],
    ])('refuses %s, naming the field', async (_case, filter, message) => {
      const refused = a.history.listInvocations('weather', filter as HistoryFilter);
      await expect(refused).rejects.toBeInstanceOf(WebhookAdminInputError);
      await expect(refused).rejects.toThrow(message);
    });
  });

  describe('watchRuns', () => {
    it("passes state changes of the bot's runs (every bot's without one), never an emitted output, until stopped", () => {
      const bus = a.t.app.get(ClusterBus);
      const seen: RunChange[] = [];
      const everyBot: RunChange[] = [];
      const stop = a.history.watchRuns('weather', (change) => seen.push(change));
      const stopAll = a.history.watchRuns(undefined, (change) => everyBot.push(change));
      const running: RunChange = { invocationId: 'inv_1', botId: 'weather', triggerId: base.triggerId, status: 'running' };
      const other: RunChange = { invocationId: 'inv_2', botId: 'other', triggerId: base.triggerId, status: 'queued' };
      bus.announce(running);
      bus.announce({ ...running, kind: 'output' });
      bus.announce(other);
      stop();
      bus.announce({ ...running, status: 'succeeded' });
      stopAll();
      expect(seen).toEqual([running]);
      expect(everyBot).toEqual([running, other, { ...running, status: 'succeeded' }]);
    });
  });
});
