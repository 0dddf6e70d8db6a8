import { Inject, Injectable, Logger } from '@nestjs/common';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { BotRunner, type DispatchedRun, type RunReservation } from './bot-runner.js';
import { DispatchRetries } from './dispatch-retries.js';
import { InvocationExecutor } from './invocation.executor.js';
import { RunClaimError } from './run-error.js';

/** A first-in first-out queue with O(1) push and shift: an array read from a moving head, compacted as it drains. */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** Keeps only the items `keep` accepts, in order. */
  retain(keep: (item: T) => boolean): void {
    this.items = this.items.slice(this.head).filter(keep);
    this.head = 0;
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined as T; // let it be collected
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

/** One account's runs in this process: those waiting, in arrival order, and how many hold a slot. */
interface AccountRuns {
  id: string;
  waiting: Fifo<string>;
  /** Runs of the account holding a slot (being claimed, or their bot executing). */
  running: number;
  /** Bumped at each enrolment: an entry of `levels` is live only while it carries the account's current turn. */
  turn: number;
  /** Enrolled in `levels` (it has waiting runs and is under its cap). */
  enrolled: boolean;
}

/** An account's place in line: valid while `turn` is still the account's. */
interface Turn {
  account: AccountRuns;
  turn: number;
}

const isLive = (entry: Turn): boolean => entry.account.enrolled && entry.turn === entry.account.turn;

/**
 * Runs bots in this process: at most `maxConcurrentRuns` at once. A slot is held from the run's claim until
 * its bot's `main()` returns (or its signal ends it): storing the outcome happens outside the slot, so a
 * slot is never idle on a database round trip after the bot is done (outcomes being stored are bounded by
 * `maxConcurrentRuns` too, so a slow database slows the starts instead of piling up memory).
 *
 * Fair share without waste: an account alone may use every slot; when several accounts have runs waiting,
 * a freed slot goes to the account holding the fewest slots, ties in turn (round robin), so another
 * account's first run waits at most for one run to end, and accounts with deep backlogs share the slots
 * evenly. Each account's runs start in arrival order. `maxConcurrentRunsPerAccount`, when set, is a hard
 * cap per account in this process. Picking the next run costs O(maxConcurrentRuns) at most, whatever the
 * backlog. Once the executor drains (shutdown) nothing new starts: runs still waiting stay `queued` in the
 * database and the next start dispatches them.
 */
@Injectable()
export class InProcessBotRunner extends BotRunner {
  private readonly logger = new Logger(LOG_CONTEXT);
  private readonly accounts = new Map<string, AccountRuns>();
  /** `levels[n]`: accounts holding n slots that have runs waiting, in the order they get the next free slot. */
  private readonly levels: Fifo<Turn>[] = [];
  /** Runs holding a slot (being claimed, or their bot executing). */
  private running = 0;
  /** Runs whose bot is done and whose outcome is being stored. */
  private finishing = 0;
  /** Runs in every account's `waiting`: the backlog. */
  private waiting = 0;

  constructor(
    private readonly executor: InvocationExecutor,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
    private readonly retries: DispatchRetries,
  ) {
    super();
  }

  async dispatch(run: DispatchedRun): Promise<void> {
    if (this.executor.draining) return;
    const account = this.account(run.accountId);
    account.waiting.push(run.id);
    this.waiting++;
    if (!account.enrolled) this.enrol(account);
    this.pump();
  }

  /**
   * A slot for a run being accepted, only when one is free, no run waits for one (nobody is passed over),
   * and the account is under its cap: the accept step then stores the run `running` for this process.
   */
  override reserve(accountId: string): RunReservation | null {
    const max = this.options.maxConcurrentRuns;
    const cap = this.options.maxConcurrentRunsPerAccount;
    if (this.executor.draining || this.waiting > 0 || this.running >= max || this.finishing >= max) return null;
    const account = this.account(accountId);
    if (cap !== undefined && account.running >= cap) return null;
    const slot = this.take(account);
    let used = false;
    return {
      owner: this.executor.owner,
      start: (run) => {
        if (used) return;
        used = true;
        this.launch(
          slot,
          run.id,
          (botDone) => this.executor.runAccepted(run, botDone),
          (error) => this.unfinished(run.id, error),
        );
      },
      release: () => {
        if (used) return;
        used = true;
        slot.release();
        slot.ended();
      },
    };
  }

  private account(accountId: string): AccountRuns {
    let account = this.accounts.get(accountId);
    if (!account) {
      account = { id: accountId, waiting: new Fifo(), running: 0, turn: 0, enrolled: false };
      this.accounts.set(accountId, account);
    }
    return account;
  }

  /** Runs dispatched here and waiting for a slot (a run cancelled while it waits counts until its turn comes). */
  override backlog(): number {
    return this.waiting;
  }

  /** Of those, the account's. */
  override backlogOf(accountId: string): number {
    return this.accounts.get(accountId)?.waiting.size ?? 0;
  }

  /** Runs dispatched here wait for a slot. */
  override behind(): boolean {
    return this.waiting !== 0;
  }

  /** (Re)places the account in line at its current number of slots, at the back: the others of that level go first. */
  private enrol(account: AccountRuns): void {
    const cap = this.options.maxConcurrentRunsPerAccount;
    account.turn++;
    account.enrolled = account.waiting.size > 0 && (cap === undefined || account.running < cap);
    if (!account.enrolled) return;
    const level = (this.levels[account.running] ??= new Fifo());
    level.push({ account, turn: account.turn });
    // An account that moved to another level leaves a stale entry behind; a level the picks never reach (the
    // busiest) would keep them all, so a level is swept once it holds more than its accounts could.
    if (level.size > 2 * this.accounts.size + 64) level.retain(isLive);
  }

  /** The enrolled account holding the fewest slots (the first in line among those), taken out of line. */
  private next(): AccountRuns | undefined {
    for (const level of this.levels) {
      if (!level) continue;
      for (let entry = level.shift(); entry; entry = level.shift()) {
        if (isLive(entry)) {
          entry.account.enrolled = false;
          return entry.account;
        }
      }
    }
    return undefined;
  }

  private pump(): void {
    const max = this.options.maxConcurrentRuns;
    while (!this.executor.draining && this.running < max && this.finishing < max) {
      const account = this.next();
      if (!account) return;
      const id = account.waiting.shift()!;
      this.waiting--;
      // A claim that failed (a database error) leaves the run queued: it is dispatched here again, later.
      const failed = (error: unknown) =>
        error instanceof RunClaimError
          ? this.retries.later({ id, accountId: account.id }, (run) => this.dispatch(run), error.cause)
          : this.unfinished(id, error);
      this.launch(this.take(account), id, (botDone) => this.executor.execute(id, botDone), failed);
    }
  }

  /** A slot for one of the account's runs; `release` frees it when the bot is done, `ended` once the run's outcome is stored. */
  private take(account: AccountRuns): { release(): void; ended(): void } {
    account.running++;
    this.running++;
    this.enrol(account);
    let released = false;
    return {
      // The slot is freed as soon as the bot is done (or the run never started), before its outcome is stored.
      release: () => {
        if (released) return;
        released = true;
        this.running--;
        this.finishing++;
        account.running--;
        this.enrol(account);
        this.pump();
      },
      ended: () => {
        this.finishing--;
        // Only while the map still holds this account: once it went idle and was dropped, a later run of the same id
        // made a new one, which this (late) outcome must not drop (its runs would escape the cap and the backlog).
        if (account.running === 0 && account.waiting.size === 0 && this.accounts.get(account.id) === account) {
          this.accounts.delete(account.id);
        }
        this.pump();
      },
    };
  }

  /**
   * Runs `run` in `slot`; what it throws (its claim, or storing its start or outcome, met a database error)
   * goes to `failed` once the slot is free.
   */
  private launch(
    slot: { release(): void; ended(): void },
    id: string,
    run: (botDone: () => void) => Promise<void>,
    failed: (error: unknown) => void,
  ): void {
    const ended = () => {
      slot.release();
      slot.ended();
    };
    run(() => slot.release()).then(
      () => {
        this.retries.forget(id);
        ended();
      },
      (error: unknown) => {
        ended();
        failed(error);
      },
    );
  }

  /**
   * A run claimed here whose start or outcome could not be stored: its lease runs out, and recovery settles it. Given
   * up here, so its failed claims before are forgotten too (were recovery to hand it back, it starts again at 0.5 s).
   */
  private unfinished(id: string, error: unknown): void {
    this.retries.forget(id);
    this.logger.error(`Run ${id} could not be executed`, error instanceof Error ? error.stack : String(error));
  }
}
