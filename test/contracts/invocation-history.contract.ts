import type { HistoryQuery } from '../../src/persistence/invocation.repository.js';
import type { InvocationStatus, NewInvocation } from '../../src/persistence/records.js';
import type { WebhookStorage } from '../../src/persistence/webhook-storage.js';
import { at, eachFreshStorage, numberedRuns, type OpenStorage } from './storages.js';

const TRIGGER_A = 'trg_HISTORYAAAAAAAAAA';
const TRIGGER_B = 'trg_HISTORYBBBBBBBBBB';
const TRIGGER_OTHER = 'trg_HISTORYOOOOOOOOOO';
const ALL = 10_000;

/**
 * The history queries of `InvocationRepository` (`listByBot`, `countByBotSince`, `lastUsedAt`), the same
 * checks on every implementation (test/contracts/storage.contract.ts). Call inside a `describe`.
 */
export function invocationHistoryContract(open: OpenStorage): void {
  let s: WebhookStorage;
  eachFreshStorage(open, (storage) => (s = storage));

  const newInvocation = numberedRuns(TRIGGER_A);

  /** Inserts a run and brings it to `status` the way the service and the executor do. */
  async function stored(status: InvocationStatus, fields: Partial<NewInvocation> = {}): Promise<NewInvocation> {
    const i = newInvocation(fields);
    await s.invocations.insert(i);
    if (status === 'cancelled') expect(await s.invocations.transition(i.id, 'queued', 'cancelled', { finishedAt: at(9999) })).toBe(true);
    if (status === 'queued' || status === 'cancelled') return i;
    expect(await s.invocations.markRunning(i.id, at(9000), 'owner', at(99_999))).not.toBeNull();
    if (status !== 'running') {
      const error = status === 'succeeded' ? null : { message: status };
      expect(await s.invocations.transition(i.id, 'running', status, { finishedAt: at(9999), outputs: [], error })).toBe(true);
    }
    return i;
  }

  const list = (botId: string, query: Partial<HistoryQuery> = {}) =>
    s.invocations.listByBot(botId, { limit: ALL, outputsUpTo: 100_000, inputsUpTo: 100_000, errorUpTo: 100_000, ...query });
  const ids = async (botId: string, query: Partial<HistoryQuery> = {}) => (await list(botId, query)).map((r) => r.id);

  it("lists a bot's runs newest first, up to a limit", async () => {
    const first = newInvocation({ createdAt: at(1) });
    const second = newInvocation({ createdAt: at(2) });
    const third = newInvocation({ createdAt: at(3) });
    for (const i of [second, third, first, newInvocation({ botId: 'other' })]) await s.invocations.insert(i);
    expect(await ids('echo', { limit: 10 })).toEqual([third.id, second.id, first.id]);
    expect(await ids('echo', { limit: 2 })).toEqual([third.id, second.id]);
    expect(await list('nobody')).toEqual([]);
  });

  it('leaves outputs longer than the bound out of a list, flagged, and keeps them whole by id', async () => {
    const short = newInvocation({ createdAt: at(1) });
    const long = newInvocation({ createdAt: at(2) });
    for (const i of [short, long]) await s.invocations.insert(i);
    for (const [i, message] of [
      [short, 'x'],
      [long, 'y'.repeat(500)],
    ] as const) {
      await s.invocations.markRunning(i.id, at(3), 'owner', at(10_000));
      await s.invocations.transition(i.id, 'running', 'succeeded', { finishedAt: at(4), outputs: [{ title: 't', message }], error: null });
    }
    const [listedLong, listedShort] = await list('echo', { limit: 10, outputsUpTo: 100 });
    expect(listedShort).toMatchObject({ id: short.id, outputs: [{ title: 't', message: 'x' }], outputsTruncated: false });
    expect(listedLong).toMatchObject({ id: long.id, outputs: null, outputsTruncated: true });
    expect((await s.invocations.findById(long.id))?.outputs).toEqual([{ title: 't', message: 'y'.repeat(500) }]);
    // The bound holds on every query shape: filtered, searched, paged.
    const shapes: Array<Partial<HistoryQuery>> = [
      { status: 'succeeded' },
      { triggerId: TRIGGER_A },
      { createdFrom: at(2), createdBefore: at(3) },
      { search: long.id },
      { after: { createdAt: at(3), id: long.id } },
    ];
    for (const shape of shapes) {
      const [row] = await list('echo', { ...shape, outputsUpTo: 100 });
      expect(row).toMatchObject({ id: long.id, outputs: null, outputsTruncated: true });
    }
  });

  it('leaves inputs and an error longer than their bounds out of a list, flagged, and keeps them whole by id', async () => {
    const short = newInvocation({ createdAt: at(1), inputs: { n: 1 } });
    const long = newInvocation({ createdAt: at(2), inputs: { blob: 'i'.repeat(500) } });
    for (const i of [short, long]) await s.invocations.insert(i);
    for (const [i, message] of [
      [short, 'short failure'],
      [long, 'e'.repeat(500)],
    ] as const) {
      await s.invocations.markRunning(i.id, at(3), 'owner', at(10_000));
      await s.invocations.transition(i.id, 'running', 'failed', { finishedAt: at(4), outputs: [], error: { message, code: 'boom' } });
    }
    const bounds = { inputsUpTo: 100, errorUpTo: 100 };
    const [listedLong, listedShort] = await list('echo', { limit: 10, ...bounds });
    expect(listedShort).toMatchObject({
      id: short.id,
      inputs: { n: 1 },
      inputsTruncated: false,
      error: { message: 'short failure', code: 'boom' },
      errorTruncated: false,
      outputsTruncated: false,
    });
    expect(listedLong).toMatchObject({ id: long.id, inputs: {}, inputsTruncated: true, error: null, errorTruncated: true });
    // Each flag is its own: the outputs (empty) were short enough.
    expect(listedLong).toMatchObject({ outputs: [], outputsTruncated: false });
    const whole = await s.invocations.findById(long.id);
    expect(whole).toMatchObject({ inputs: { blob: 'i'.repeat(500) }, error: { message: 'e'.repeat(500), code: 'boom' } });
    // The bounds hold on every query shape: filtered, searched, paged.
    const shapes: Array<Partial<HistoryQuery>> = [
      { status: 'failed' },
      { triggerId: TRIGGER_A },
      { createdFrom: at(2), createdBefore: at(3) },
      { search: long.id },
      { after: { createdAt: at(3), id: long.id } },
    ];
    for (const shape of shapes) {
      const [row] = await list('echo', { ...shape, ...bounds });
      expect(row).toMatchObject({ id: long.id, inputs: {}, inputsTruncated: true, error: null, errorTruncated: true });
    }
  });

  describe('filters', () => {
    const STATUSES: InvocationStatus[] = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out'];
    let runs: NewInvocation[];
    let statusOf: Map<string, InvocationStatus>;

    /** 24 runs of `echo` over two triggers and all six statuses, 10 s apart, and runs of another bot. */
    beforeEach(async () => {
      runs = [];
      statusOf = new Map();
      for (let n = 0; n < 24; n++) {
        const status = STATUSES[n % 6];
        const run = await stored(status, { triggerId: n % 4 < 2 ? TRIGGER_A : TRIGGER_B, createdAt: at(100 + n * 10) });
        runs.push(run);
        statusOf.set(run.id, status);
      }
      for (let n = 0; n < 6; n++) await stored(STATUSES[n], { botId: 'other', triggerId: TRIGGER_OTHER, createdAt: at(100 + n * 10) });
    });

    /** What a filter should find, from the runs as inserted: newest first. */
    const expected = (keep: (r: NewInvocation) => boolean) =>
      runs
        .filter(keep)
        .reverse()
        .map((r) => r.id);

    it('each filter alone', async () => {
      for (const status of STATUSES) {
        const want = expected((r) => statusOf.get(r.id) === status);
        expect(want).toHaveLength(4);
        expect(await ids('echo', { status })).toEqual(want);
      }
      expect(await ids('echo', { triggerId: TRIGGER_B })).toEqual(expected((r) => r.triggerId === TRIGGER_B));
      expect(await ids('echo', { createdFrom: at(150) })).toEqual(expected((r) => r.createdAt >= at(150)));
      expect(await ids('echo', { createdBefore: at(150) })).toEqual(expected((r) => r.createdAt < at(150)));
      // [from, to): a run exactly at `createdBefore` is out, one exactly at `createdFrom` is in.
      expect(await ids('echo', { createdFrom: at(150), createdBefore: at(200) })).toEqual([
        runs[9].id,
        runs[8].id,
        runs[7].id,
        runs[6].id,
        runs[5].id,
      ]);
    });

    it('filters combined (AND), with a limit', async () => {
      const want = expected((r) => r.triggerId === TRIGGER_A && statusOf.get(r.id) === 'queued');
      expect(want.length).toBeGreaterThan(0);
      expect(await ids('echo', { triggerId: TRIGGER_A, status: 'queued' })).toEqual(want);
      const window = (r: NewInvocation) => r.createdAt >= at(120) && r.createdAt < at(300);
      expect(await ids('echo', { triggerId: TRIGGER_B, createdFrom: at(120), createdBefore: at(300) })).toEqual(
        expected((r) => r.triggerId === TRIGGER_B && window(r)),
      );
      const all4 = expected((r) => r.triggerId === TRIGGER_B && statusOf.get(r.id) === 'succeeded' && window(r));
      expect(all4.length).toBeGreaterThan(0);
      expect(await ids('echo', { triggerId: TRIGGER_B, status: 'succeeded', createdFrom: at(120), createdBefore: at(300) })).toEqual(all4);
      expect(await ids('echo', { status: 'failed', createdFrom: at(120), limit: 2 })).toEqual(
        expected((r) => statusOf.get(r.id) === 'failed' && r.createdAt >= at(120)).slice(0, 2),
      );
    });

    it("finds nothing through another bot's trigger, an unknown status or an empty range", async () => {
      expect(await ids('echo', { triggerId: TRIGGER_OTHER })).toEqual([]);
      expect(await ids('other', { triggerId: TRIGGER_A })).toEqual([]);
      expect(await ids('echo', { createdFrom: at(200), createdBefore: at(200) })).toEqual([]);
      expect(await ids('echo', { createdFrom: at(10_000) })).toEqual([]);
    });

    it('pages by the cursor under each filter', async () => {
      const filters: Array<Partial<HistoryQuery>> = [{}, { status: 'running' }, { triggerId: TRIGGER_A }, { createdFrom: at(150) }];
      for (const filter of filters) {
        const whole = await ids('echo', filter);
        const paged: string[] = [];
        let after: HistoryQuery['after'];
        for (;;) {
          const page = await list('echo', { ...filter, limit: 3, after });
          paged.push(...page.map((r) => r.id));
          if (page.length < 3) break;
          after = { createdAt: page[2].createdAt, id: page[2].id };
        }
        expect(paged).toEqual(whole);
      }
    });
  });

  describe('search', () => {
    it('finds a run by its exact id or by its exact idempotency key, only within the bot', async () => {
      const keyed = await stored('succeeded', { idempotencyKey: 'order-42', createdAt: at(10) });
      const plain = await stored('queued', { createdAt: at(20) });
      const sameKeyOtherTrigger = await stored('failed', { idempotencyKey: 'order-42', triggerId: TRIGGER_B, createdAt: at(30) });
      const otherBot = await stored('succeeded', {
        botId: 'other',
        triggerId: TRIGGER_OTHER,
        idempotencyKey: 'order-77',
        createdAt: at(40),
      });
      await stored('queued', { idempotencyKey: 'order-4', createdAt: at(50) });

      expect(await ids('echo', { search: plain.id })).toEqual([plain.id]);
      expect(await ids('echo', { search: keyed.id })).toEqual([keyed.id]);
      // One key may be used on two triggers of the bot: both runs, newest first.
      expect(await ids('echo', { search: 'order-42' })).toEqual([sameKeyOtherTrigger.id, keyed.id]);
      // Exact, not a prefix or a pattern.
      expect(await ids('echo', { search: 'order-%' })).toEqual([]);
      expect(await ids('echo', { search: 'order' })).toEqual([]);
      // Another bot's run is not found, by key or by id.
      expect(await ids('echo', { search: 'order-77' })).toEqual([]);
      expect(await ids('echo', { search: otherBot.id })).toEqual([]);
      expect(await ids('other', { search: 'order-77' })).toEqual([otherBot.id]);
      expect(await ids('echo', { search: 'inv_unknownunknownunknow' })).toEqual([]);
    });

    it('applies the filters and the cursor to what the search found; a key equal to an id finds both once', async () => {
      const keyed = await stored('succeeded', { idempotencyKey: 'k', createdAt: at(10) });
      const keyedB = await stored('failed', { idempotencyKey: 'k', triggerId: TRIGGER_B, createdAt: at(20) });
      expect(await ids('echo', { search: 'k', status: 'failed' })).toEqual([keyedB.id]);
      expect(await ids('echo', { search: 'k', triggerId: TRIGGER_A })).toEqual([keyed.id]);
      expect(await ids('echo', { search: 'k', createdBefore: at(15) })).toEqual([keyed.id]);
      expect(await ids('echo', { search: 'k', createdFrom: at(15) })).toEqual([keyedB.id]);
      expect(await ids('echo', { search: 'k', limit: 1 })).toEqual([keyedB.id]);
      expect(await ids('echo', { search: 'k', after: { createdAt: keyedB.createdAt, id: keyedB.id } })).toEqual([keyed.id]);
      expect(await ids('echo', { search: keyed.id, status: 'queued' })).toEqual([]);

      const selfKeyed = newInvocation({ createdAt: at(30) });
      await s.invocations.insert({ ...selfKeyed, idempotencyKey: selfKeyed.id });
      expect(await ids('echo', { search: selfKeyed.id })).toEqual([selfKeyed.id]);
    });
  });

  it('pages through 120 runs, 50 at a time, with runs sharing a created_at, none lost or repeated', async () => {
    const inserted: NewInvocation[] = [];
    // Six runs per second: both page boundaries (50, 100) fall inside a group of equal timestamps.
    // Inserted out of order, so neither the insertion order nor the id alone gives the answer.
    for (let n = 0; n < 120; n++) inserted.push(newInvocation({ createdAt: at(1000 + Math.floor(((n * 37) % 120) / 6)) }));
    for (const i of inserted) await s.invocations.insert(i);
    await s.invocations.insert(newInvocation({ botId: 'other', createdAt: at(1005) }));

    const pages: string[][] = [];
    let after: HistoryQuery['after'];
    for (;;) {
      const page = await list('echo', { limit: 50, after });
      pages.push(page.map((r) => r.id));
      if (page.length < 50) break;
      const last = page[page.length - 1];
      after = { createdAt: last.createdAt, id: last.id };
    }
    expect(pages.map((p) => p.length)).toEqual([50, 50, 20]);
    const seen = pages.flat();
    expect(new Set(seen).size).toBe(120);
    const want = [...inserted]
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
      .map((r) => r.id);
    expect(seen).toEqual(want);
    // The boundaries really fell among equal timestamps.
    const createdOf = new Map(inserted.map((i) => [i.id, i.createdAt.getTime()]));
    expect(createdOf.get(pages[0][49])).toBe(createdOf.get(pages[1][0]));
    expect(createdOf.get(pages[1][49])).toBe(createdOf.get(pages[2][0]));
    // A cursor past the oldest run: an empty page.
    const oldest = want[want.length - 1];
    expect(await list('echo', { after: { createdAt: new Date(createdOf.get(oldest)!), id: oldest } })).toEqual([]);
  });

  it('counts runs created since a time, up to a cap', async () => {
    for (let n = 0; n < 7; n++) await s.invocations.insert(newInvocation({ createdAt: at(100 + n) }));
    await s.invocations.insert(newInvocation({ botId: 'other', createdAt: at(200) }));
    expect(await s.invocations.countByBotSince('echo', at(0), 1000)).toBe(7);
    expect(await s.invocations.countByBotSince('echo', at(103), 1000)).toBe(4); // at or after
    expect(await s.invocations.countByBotSince('echo', at(103), 4)).toBe(4);
    expect(await s.invocations.countByBotSince('echo', at(103), 3)).toBe(3);
    expect(await s.invocations.countByBotSince('echo', at(0), 0)).toBe(0);
    expect(await s.invocations.countByBotSince('echo', at(107), 1000)).toBe(0);
    expect(await s.invocations.countByBotSince('nobody', at(0), 1000)).toBe(0);
  });

  it("gives each trigger's newest run time; triggers without runs are absent", async () => {
    for (const [triggerId, second] of [
      [TRIGGER_A, 5],
      [TRIGGER_A, 9],
      [TRIGGER_A, 7],
      [TRIGGER_B, 3],
    ] as const) {
      await s.invocations.insert(newInvocation({ triggerId, createdAt: at(second) }));
    }
    expect(await s.invocations.lastUsedAt([])).toEqual(new Map());
    expect(await s.invocations.lastUsedAt([TRIGGER_A, TRIGGER_B, TRIGGER_OTHER, TRIGGER_A])).toEqual(
      new Map([
        [TRIGGER_A, at(9)],
        [TRIGGER_B, at(3)],
      ]),
    );
    // More triggers than one statement takes.
    const many = Array.from({ length: 150 }, (_, n) => `trg_MANY${String(n).padStart(12, '0')}`);
    const last = await s.invocations.lastUsedAt([...many, TRIGGER_B]);
    expect(last).toEqual(new Map([[TRIGGER_B, at(3)]]));
    expect(last.get(TRIGGER_B)).toBeInstanceOf(Date);
  });
}
