import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { KEY_USES_NOT_STORED } from '../errors/webhook-trigger.messages.js';
import type { TriggerRecord } from '../persistence/records.js';
import { TriggerRepository } from '../persistence/trigger.repository.js';
import { Clock } from '../time/clock.js';
import { matchTriggerKey } from '../keys/trigger-keys.js';

/** A key's last use is written at most this often by one process. */
export const KEY_USE_WRITE_INTERVAL_MS = 60_000;
/** Uses noted within this long go to the database in one write. */
const KEY_USE_FLUSH_DELAY_MS = 1_000;

/**
 * Checks a presented `X-Key` against a trigger's keys (`matchTriggerKey`, judged on the module's `Clock`) and
 * notes which key it was, for "last used": at most once a minute per key in this process, the uses of a second
 * written together by one `TriggerRepository.recordKeyUses`, never a write per request. A failed write is
 * logged and dropped (a last-used time is a hint, not a record).
 */
@Injectable()
export class TriggerKeyCheck implements OnModuleDestroy {
  private readonly logger = new Logger('TriggerKeyCheck');
  /** Key id → when (clock ms) this process last noted its use; entries older than the interval are dropped. */
  private readonly noted = new Map<string, number>();
  private pending = new Map<string, Date>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly triggers: TriggerRepository,
    @Inject(Clock) private readonly clock: Clock,
  ) {}

  /** True when `presented` is one of the trigger's usable keys (and its use is noted). */
  check(trigger: Pick<TriggerRecord, 'keys'>, presented: string): boolean {
    const now = this.clock.now();
    const keyId = matchTriggerKey(presented, trigger.keys, now);
    if (keyId === null) return false;
    const last = this.noted.get(keyId);
    if (last === undefined || now - last >= KEY_USE_WRITE_INTERVAL_MS) {
      this.noted.set(keyId, now);
      this.pending.set(keyId, new Date(now));
      this.timer ??= setTimeout(() => void this.flush(), KEY_USE_FLUSH_DELAY_MS).unref();
    }
    return true;
  }

  /** Writes the uses noted so far (at once, without waiting for the timer); resolves once written. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const uses = this.pending;
    this.pending = new Map();
    const now = this.clock.now();
    for (const [keyId, at] of this.noted) if (now - at >= KEY_USE_WRITE_INTERVAL_MS) this.noted.delete(keyId);
    if (uses.size > 0) {
      this.writing = this.writing
        .then(() => this.triggers.recordKeyUses(uses))
        .catch((error: unknown) => this.logger.warn(KEY_USES_NOT_STORED(uses.size, (error as Error).message)));
    }
    return this.writing;
  }

  async onModuleDestroy(): Promise<void> {
    await this.flush();
  }
}
