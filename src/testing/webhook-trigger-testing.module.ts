import {
  type DynamicModule,
  type FactoryProvider,
  Inject,
  Injectable,
  Module,
  type ModuleMetadata,
  type OnApplicationBootstrap,
  type Provider,
} from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { WebhookTriggersAdmin } from '../admin/webhook-triggers.admin.js';
import type { WebhookTriggerModuleOptions } from '../options/webhook-trigger-options.interface.js';
import { InMemoryWebhookStorage } from '../persistence/memory/in-memory-webhook-storage.js';
import { WebhookTriggerModule } from '../webhook-trigger.module.js';
import { WEBHOOK_BOT_METADATA } from '../bots/webhook-bot.decorator.js';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { TESTING_NOT_A_BOT } from '../errors/webhook-trigger.messages.js';
import { CapturingCallbackTransport } from './capturing-callback.transport.js';
import { TestClock } from './test-clock.js';
import { WebhookTriggerHarness } from './webhook-trigger-harness.js';

/** What `WebhookTriggerTestingModule.forRoot()` takes. */
export interface WebhookTriggerTestingOptions {
  /** Your bots (classes decorated with `@WebhookBot()`), registered as providers. */
  bots?: Provider[];
  /** What your bots inject (real providers or your own fakes). */
  providers?: Provider[];
  /**
   * Your modules whose exported providers your bots inject (`MailModule`), imported as a feature module of yours
   * would be: the kit imports none of your modules otherwise. In `forRootAsync()` they reach the options factory too.
   */
  imports?: ModuleMetadata['imports'];
  /**
   * The module's options, as in `WebhookTriggerModule.forRoot()`, except where things are kept: the kit keeps
   * everything in memory (`database` and `migrationsRun` are refused). `keySecret` defaults to a random one,
   * so keys and callback secrets can be shown again; `shutdownGraceMs` defaults to `0`, so closing the kit ends
   * the runs still going at once (their signal fires) instead of waiting a real grace.
   */
  options?: WebhookTriggerTestingModuleOptions;
  /** Credits every bot's account starts with, unless `options.accounts` names it. `0`: accounts stay unopened (402). @default 1000 */
  credits?: number;
  /** The clock the module reads; one is made (at the real time) when none is given. */
  clock?: TestClock;
}

/** The module's options as the kit takes them: everything but where things are kept. */
export type WebhookTriggerTestingModuleOptions = Omit<WebhookTriggerModuleOptions, 'database' | 'migrationsRun'>;

/**
 * What `WebhookTriggerTestingModule.forRootAsync()` takes: the module's options from a factory (your
 * `ConfigService`…), the rest as in `forRoot()` (bots and providers are known when the module is built).
 */
export interface WebhookTriggerTestingAsyncOptions extends Omit<WebhookTriggerTestingOptions, 'options'> {
  inject?: FactoryProvider['inject'];
  useFactory: (...args: any[]) => Promise<WebhookTriggerTestingModuleOptions> | WebhookTriggerTestingModuleOptions; // eslint-disable-line @typescript-eslint/no-explicit-any -- Nest's own factory signature
}

const TESTING_CREDITS = Symbol('WEBHOOK_TRIGGER_TESTING_CREDITS');
/** One random `keySecret` for every module of a test process: its key derivation (scrypt) is paid once. */
const TESTING_KEY_SECRET = randomBytes(24).toString('base64url');

/** Opens every bot's account with the kit's credits at start, unless the options opened it. */
@Injectable()
class TestingAccounts implements OnApplicationBootstrap {
  constructor(
    private readonly admin: WebhookTriggersAdmin,
    @Inject(TESTING_CREDITS) private readonly credits: number,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.credits <= 0) return;
    for (const accountId of new Set(this.admin.listBots().map((bot) => bot.accountId))) {
      if ((await this.admin.getCredits(accountId)) === null) await this.admin.setCredits(accountId, this.credits);
    }
  }
}

/**
 * The real module for tests — guards, limits, credits, idempotency, runner, executor, events, callbacks — on
 * the in-memory storage (no files), a `TestClock` (time moves when the spec says) and a callback transport that
 * captures deliveries (no network), with a `WebhookTriggerHarness` to drive it. From
 * `nestjs-webhook-triggers/testing`; the main entry never loads it.
 */
/** The kit's own defaults, under whatever options a spec gives. */
function testingDefaults(options: WebhookTriggerTestingModuleOptions = {}): WebhookTriggerTestingModuleOptions {
  // Closing the kit ends what still runs at once (their signal fires): a spec never waits out a real grace.
  return { keySecret: TESTING_KEY_SECRET, shutdownGraceMs: 0, ...options };
}

@Module({})
export class WebhookTriggerTestingModule {
  static forRoot(config: WebhookTriggerTestingOptions = {}): DynamicModule {
    return WebhookTriggerTestingModule.build(config, (extras) =>
      WebhookTriggerModule.forRoot({ ...testingDefaults(config.options), ...extras }),
    );
  }

  /** As `forRoot()`, with the module's options from a factory that may inject (a `ConfigService`…). */
  static forRootAsync(config: WebhookTriggerTestingAsyncOptions): DynamicModule {
    return WebhookTriggerTestingModule.build(config, (extras) =>
      WebhookTriggerModule.forRootAsync({
        imports: config.imports,
        inject: config.inject,
        useFactory: async (...args: unknown[]) => testingDefaults(await config.useFactory(...args)),
        ...extras,
      }),
    );
  }

  private static build(
    config: Omit<WebhookTriggerTestingOptions, 'options'>,
    webhookModule: (extras: {
      storage: InMemoryWebhookStorage;
      clock: TestClock;
      callbackTransport: CapturingCallbackTransport;
    }) => DynamicModule,
  ): DynamicModule {
    for (const bot of config.bots ?? []) {
      const type = typeof bot === 'function' ? bot : 'useClass' in bot ? bot.useClass : undefined;
      if (type && !Reflect.getMetadata(WEBHOOK_BOT_METADATA, type)) throw new WebhookConfigurationError(TESTING_NOT_A_BOT(type.name));
    }
    const clock = config.clock ?? new TestClock();
    const transport = new CapturingCallbackTransport(clock);
    return {
      module: WebhookTriggerTestingModule,
      imports: [webhookModule({ storage: new InMemoryWebhookStorage(), clock, callbackTransport: transport }), ...(config.imports ?? [])],
      providers: [
        ...(config.bots ?? []),
        ...(config.providers ?? []),
        { provide: TestClock, useValue: clock },
        { provide: CapturingCallbackTransport, useValue: transport },
        { provide: TESTING_CREDITS, useValue: config.credits ?? 1000 },
        TestingAccounts,
        WebhookTriggerHarness,
      ],
      exports: [WebhookTriggerHarness, TestClock, CapturingCallbackTransport, WebhookTriggerModule],
    };
  }
}
