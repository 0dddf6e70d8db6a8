import { Injectable, type OnModuleInit } from '@nestjs/common';
import {
  InjectWebhookTriggerOptions,
  type ResolvedWebhookTriggerOptions,
  WebhookTriggersAdmin,
  type TriggerWithKey,
} from '../../src/index.js';
import { DEMO_ACCOUNT } from './bots.js';

export const DEMO_CREDITS = 1000;
export const DEMO_TRIGGER_NAME = 'Demo echo trigger';

export interface DemoState {
  /** True when this start created the demo account and trigger. */
  seeded: boolean;
  /** The oldest echo trigger (the seeded one unless it was deleted), with its key if it can be shown. */
  trigger: TriggerWithKey | null;
  /** The ids of the registered bots the demo account owns, as the module found them. */
  bots: string[];
}

/**
 * First start (no `demo` account yet): creates the account with 1000 credits and one trigger for `echo`.
 * Later starts change nothing and only look up the echo trigger to print it. At module init (the library's
 * modules are ready by then), so the library's startup hints, which come later, see the seeded account and
 * trigger. Never on a worker: the API process seeds.
 */
@Injectable()
export class DemoSeeder implements OnModuleInit {
  private seeded: DemoState | undefined;

  constructor(
    private readonly admin: WebhookTriggersAdmin,
    @InjectWebhookTriggerOptions() private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  async onModuleInit(): Promise<void> {
    if (this.options.role !== 'worker') this.seeded = await this.seed();
  }

  /** What the start found or seeded (after init). */
  get state(): DemoState {
    if (!this.seeded) throw new Error('DemoSeeder.state is known after app.init() on a process that serves the API');
    return this.seeded;
  }

  private async seed(): Promise<DemoState> {
    const bots = this.admin
      .listBots()
      .filter((bot) => bot.accountId === DEMO_ACCOUNT)
      .map((bot) => bot.id);
    if ((await this.admin.getCredits(DEMO_ACCOUNT)) === null) {
      const trigger = await this.admin.createTrigger('echo', { name: DEMO_TRIGGER_NAME, type: 'webhook' });
      // The account last: if anything above fails, the next start seeds again.
      await this.admin.setCredits(DEMO_ACCOUNT, DEMO_CREDITS);
      return { seeded: true, trigger, bots };
    }
    const [first] = await this.admin.listTriggers('echo');
    return { seeded: false, trigger: first ? await this.admin.viewTrigger(first.id) : null, bots };
  }
}
