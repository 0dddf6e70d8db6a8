import { Inject, Injectable, Logger } from '@nestjs/common';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { BotRunner, type DispatchedRun } from './bot-runner.js';
import { InvocationExecutor } from './invocation.executor.js';

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

/** One account's runs in this process: those waiting, in arrival order, and how many are executing. */
interface AccountRuns {
  id: string;
  waiting: Fifo<string>;
  running: number;
  /** In `turns`, i.e. it has waiting runs and a free slot of its own. */
  hasTurn: boolean;
}

/**
 * Runs bots in this process: at most `maxConcurrentRuns` at once, and at most
 * `maxConcurrentRunsPerAccount` of one account, so one account's backlog never holds every slot. Each
 * account's runs wait in their own arrival order; a free slot goes to the accounts under their cap in
 * turn (round robin), so another account's next run never waits behind a deep backlog, and starting a
 * run costs the same whatever the backlog. A slot is freed when a run ends, also when it ends by timeout
 * or cancel while its bot ignores the signal. Once the executor drains (shutdown) it starts nothing new:
 * runs still waiting stay `queued` in the database and the next start dispatches them.
 */
@Injectable()
export class InProcessBotRunner extends BotRunner {
  private readonly logger = new Logger(LOG_CONTEXT);
  private readonly accounts = new Map<string, AccountRuns>();
  /** Accounts with waiting runs and a free slot of their own, in the order they get the next free slot. */
  private readonly turns = new Fifo<AccountRuns>();
  private running = 0;
  /** Runs in every account's `waiting`: the backlog. */
  private waiting = 0;

  constructor(
    private readonly executor: InvocationExecutor,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {
    super();
  }

  async dispatch(run: DispatchedRun): Promise<void> {
    if (this.executor.draining) return;
    let account = this.accounts.get(run.accountId);
    if (!account) {
      account = { id: run.accountId, waiting: new Fifo(), running: 0, hasTurn: false };
      this.accounts.set(run.accountId, account);
    }
    account.waiting.push(run.id);
    this.waiting++;
    this.offerTurn(account);
    this.pump();
  }

  /** Runs dispatched here and waiting for a slot (a run cancelled while it waits counts until its turn comes). */
  override backlog(): number {
    return this.waiting;
  }

  /** Queues the account for a slot if it has a run waiting and a slot of its own free. */
  private offerTurn(account: AccountRuns): void {
    if (account.hasTurn || account.waiting.size === 0 || account.running >= this.options.maxConcurrentRunsPerAccount) return;
    account.hasTurn = true;
    this.turns.push(account);
  }

  private pump(): void {
    while (!this.executor.draining && this.running < this.options.maxConcurrentRuns && this.turns.size > 0) {
      const account = this.turns.shift()!;
      account.hasTurn = false;
      const id = account.waiting.shift()!;
      this.waiting--;
      account.running++;
      this.running++;
      this.offerTurn(account); // to the back of the line: the others go first
      this.executor
        .execute(id)
        .catch((error: unknown) =>
          this.logger.error(`Run ${id} could not be executed`, error instanceof Error ? error.stack : String(error)),
        )
        .finally(() => {
          this.running--;
          account.running--;
          this.offerTurn(account);
          if (account.running === 0 && account.waiting.size === 0) this.accounts.delete(account.id);
          this.pump();
        });
    }
  }
}
