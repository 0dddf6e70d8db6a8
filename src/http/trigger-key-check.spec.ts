import { ManualClock } from '../../test/fakes/manual-clock.js';
import { triggerKeyRecord } from '../../test/fakes/trigger-keys.js';
import { until } from '../../test/helpers/http.js';
import { InMemoryWebhookDatabase } from '../persistence/memory/in-memory-database.js';
import { InMemoryTriggerRepository } from '../persistence/memory/in-memory-trigger.repository.js';
import type { TriggerRecord } from '../persistence/records.js';
import { KEY_USE_WRITE_INTERVAL_MS, TriggerKeyCheck } from './trigger-key-check.js';

/** A trigger store that records each write of last-used times. */
class RecordingTriggerRepository extends InMemoryTriggerRepository {
  readonly writes: Array<Map<string, Date>> = [];
  override recordKeyUses(uses: ReadonlyMap<string, Date>): Promise<void> {
    this.writes.push(new Map(uses));
    return super.recordKeyUses(uses);
  }
}

describe('TriggerKeyCheck', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  let repository: RecordingTriggerRepository;
  let check: TriggerKeyCheck;
  let trigger: TriggerRecord;

  beforeEach(async () => {
    repository = new RecordingTriggerRepository(new InMemoryWebhookDatabase());
    check = new TriggerKeyCheck(repository, clock);
    const id = 'trg_0000000000000001';
    // Created one after the other (the keys are listed oldest first).
    const keys = [
      triggerKeyRecord(id, 'whk_a'),
      triggerKeyRecord(id, 'whk_b', { expiresAt: new Date(clock.now() + 1000), createdAt: new Date(Date.now() + 1) }),
    ];
    trigger = { id, botId: 'echo', accountId: 'acct', name: 't', type: 'webhook', keys, createdAt: new Date() };
    await repository.create(trigger);
  });

  afterEach(() => check.onModuleDestroy());

  const lastUsed = async () => (await repository.findActive(trigger.id))!.keys.map((k) => k.lastUsedAt?.getTime() ?? null);

  it('accepts any usable key on the clock, and refuses a wrong or expired one', () => {
    expect(check.check(trigger, 'whk_a')).toBe(true);
    expect(check.check(trigger, 'whk_b')).toBe(true);
    expect(check.check(trigger, 'whk_c')).toBe(false);
    clock.advance(1000);
    expect(check.check(trigger, 'whk_b')).toBe(false);
    expect(check.check(trigger, 'whk_a')).toBe(true);
  });

  it('writes the uses of many requests as one batch, each key at most once a minute', async () => {
    const start = clock.now();
    for (let i = 0; i < 100; i++) expect(check.check(trigger, i % 2 ? 'whk_a' : 'whk_b')).toBe(true);
    await check.flush();
    expect(repository.writes).toHaveLength(1);
    expect(await lastUsed()).toEqual([start, start]);

    clock.advance(KEY_USE_WRITE_INTERVAL_MS - 1);
    for (let i = 0; i < 10; i++) check.check(trigger, 'whk_a');
    await check.flush();
    expect(repository.writes).toHaveLength(1); // within the minute: nothing written

    clock.advance(1);
    check.check(trigger, 'whk_a');
    await check.flush();
    expect(repository.writes).toHaveLength(2);
    expect(await lastUsed()).toEqual([start + KEY_USE_WRITE_INTERVAL_MS, start]);
  });

  it('writes noted uses by itself, without a flush, soon after', async () => {
    check.check(trigger, 'whk_a');
    await until(() => repository.writes.length > 0, 5_000, 'the batch written by its timer');
    expect(repository.writes).toEqual([new Map([[trigger.keys[0].id, new Date(clock.now())]])]);
  });
});
