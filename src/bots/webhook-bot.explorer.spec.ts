import type { INestApplication, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { WebhookTriggersAdmin } from '../admin/webhook-triggers.admin.js';
import { WebhookTriggerModule } from '../webhook-trigger.module.js';
import { BOT_NOT_EXTENDING_BASE, DUPLICATE_BOT_ID } from '../errors/webhook-trigger.messages.js';
import type { BotOutput } from './bot.types.js';
import { WebhookBotHost } from './webhook-bot-host.js';
import { WebhookBot } from './webhook-bot.decorator.js';

@WebhookBot({ id: 'summarize', name: 'Summarizer', credits: 3, accountId: 'team' })
class SummarizeBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [];
  }
}

@WebhookBot({ id: 'plain' })
class PlainBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [];
  }
}

@WebhookBot({ id: 'summarize' })
class AnotherSummarizeBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [];
  }
}

@WebhookBot({ id: 'loose' })
class NotABot {
  async main(): Promise<BotOutput[]> {
    return [];
  }
}

// Without the main() the runner calls, the compiler refuses the decorator (and startup refuses the class).
// @ts-expect-error: @WebhookBot() takes a class with the bot's main()
@WebhookBot({ id: 'no-main' })
class NoMainBot {
  async run(): Promise<BotOutput[]> {
    return [];
  }
}

@WebhookBot({ id: 'has spaces' })
class BadIdBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [];
  }
}

@WebhookBot({ id: 'negative', credits: -1 })
class NegativeCreditsBot extends WebhookBotHost {
  async main(): Promise<BotOutput[]> {
    return [];
  }
}

describe('WebhookBotExplorer', () => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close().catch(() => undefined);
    app = undefined;
  });

  async function create(bots: Type[]): Promise<INestApplication> {
    const moduleRef = await Test.createTestingModule({
      imports: [WebhookTriggerModule.forRoot({ database: { type: 'better-sqlite3', database: ':memory:' }, defaultAccountId: 'house' })],
      providers: bots,
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    return app;
  }

  it('registers decorated bots with their options and the defaults', async () => {
    await (await create([SummarizeBot, PlainBot])).init();
    const bots = app!.get(WebhookTriggersAdmin).listBots();
    expect(bots).toEqual(
      expect.arrayContaining([
        { id: 'summarize', name: 'Summarizer', credits: 3, accountId: 'team' },
        { id: 'plain', name: 'plain', credits: 1, accountId: 'house' },
      ]),
    );
    expect(bots).toHaveLength(2);
  });

  it('stops startup when two classes use the same bot id, naming both', async () => {
    const starting = (await create([SummarizeBot, AnotherSummarizeBot])).init();
    await expect(starting).rejects.toThrow(DUPLICATE_BOT_ID('summarize', 'SummarizeBot', 'AnotherSummarizeBot'));
  });

  it('stops startup when a decorated class does not extend WebhookBotHost, naming the class and the fix', async () => {
    const starting = (await create([PlainBot, NotABot])).init();
    await expect(starting).rejects.toThrow(BOT_NOT_EXTENDING_BASE('NotABot'));
    expect(BOT_NOT_EXTENDING_BASE('NotABot')).toContain('class NotABot extends WebhookBotHost');
    await app!.close().catch(() => undefined);
    await expect((await create([NoMainBot])).init()).rejects.toThrow(BOT_NOT_EXTENDING_BASE('NoMainBot'));
  });

  it('stops startup for an unusable id or a negative price, naming the class', async () => {
    await expect((await create([BadIdBot])).init()).rejects.toThrow('@WebhookBot(BadIdBot).id');
    await app!.close().catch(() => undefined);
    await expect((await create([NegativeCreditsBot])).init()).rejects.toThrow('@WebhookBot(NegativeCreditsBot).credits');
  });
});
