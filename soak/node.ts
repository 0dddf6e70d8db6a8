// One process of the soak's fleet (docs/soak.md): the compiled WebhookTriggerModule (dist/) on the soak's
// PostgreSQL database and Redis server, as an API node (`SOAK_ROLE=api`: HTTP, never runs a bot) or a
// worker (`SOAK_ROLE=worker`: runs bots from the BullMQ queue, no HTTP). The sample app cannot be used: its
// bots all belong to one account, share one time limit and leave no trace of their own, and the soak needs
// two accounts, a short time limit on one bot, and a side-effect log written by every bot body.
//
// Every bot body first appends `<invocationId> start <ms> <pid>` to this process's side-effect log
// (`SOAK_EFFECTS_DIR/effects-<pid>.log`, O_APPEND, written synchronously before anything else the body does),
// and `<invocationId> end <ms> <pid>` when it returns, so the orchestrator can tell how often a body ran.
import 'reflect-metadata';
import { type DynamicModule, type INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BotContext, BotInputs, BotOutput } from '../src/index.js';
import { lib, redisLib } from './lib.js';
import { SOAK_BOTS, SOAK_LIMITS, SOAK_TIMINGS, type SeedResult } from './shared.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`soak node: ${name} is not set`);
  return value;
};

const role = env('SOAK_ROLE') as 'api' | 'worker';
const effectsLog = join(env('SOAK_EFFECTS_DIR'), `effects-${process.pid}.log`);

function mark(ctx: BotContext, what: 'start' | 'end'): void {
  appendFileSync(effectsLog, `${ctx.invocationId} ${what} ${Date.now()} ${process.pid}\n`);
}

/** Resolves after `ms`, or rejects with the run's stop reason when its signal fires first. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const ms = (inputs: BotInputs, fallback: number): number => (typeof inputs.ms === 'number' && inputs.ms >= 0 ? inputs.ms : fallback);

@lib.WebhookBot({ id: SOAK_BOTS.echo.id, accountId: SOAK_BOTS.echo.account, credits: SOAK_BOTS.echo.credits })
class EchoBot extends lib.WebhookBotHost {
  async main(inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    mark(ctx, 'start');
    const out = Object.entries(inputs).map(([title, v]) => ({ title, message: typeof v === 'string' ? v : JSON.stringify(v) }));
    mark(ctx, 'end');
    return out;
  }
}

@lib.WebhookBot({ id: SOAK_BOTS.probe.id, accountId: SOAK_BOTS.probe.account, credits: SOAK_BOTS.probe.credits })
class ProbeBot extends lib.WebhookBotHost {
  async main(_inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    mark(ctx, 'start');
    mark(ctx, 'end');
    return [{ title: 'probe', message: 'ok' }];
  }
}

@lib.WebhookBot({ id: SOAK_BOTS.fail.id, accountId: SOAK_BOTS.fail.account, credits: SOAK_BOTS.fail.credits })
class FailBot extends lib.WebhookBotHost {
  async main(_inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    mark(ctx, 'start');
    mark(ctx, 'end');
    throw new Error('soak: this bot always fails');
  }
}

@lib.WebhookBot({
  id: SOAK_BOTS.timeout.id,
  accountId: SOAK_BOTS.timeout.account,
  credits: SOAK_BOTS.timeout.credits,
  timeoutMs: SOAK_TIMINGS.timeoutBotLimitMs,
})
class TimeoutBot extends lib.WebhookBotHost {
  async main(_inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    mark(ctx, 'start');
    await sleep(SOAK_TIMINGS.timeoutBotLimitMs * 4, ctx.signal);
    mark(ctx, 'end');
    return [{ title: 'late', message: 'should have timed out' }];
  }
}

@lib.WebhookBot({ id: SOAK_BOTS.long.id, accountId: SOAK_BOTS.long.account, credits: SOAK_BOTS.long.credits })
class LongBot extends lib.WebhookBotHost {
  async main(inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    mark(ctx, 'start');
    const wait = ms(inputs, 2000);
    await sleep(wait, ctx.signal);
    mark(ctx, 'end');
    return [{ title: 'slept', message: String(wait) }];
  }
}

@lib.WebhookBot({
  id: SOAK_BOTS.retry.id,
  accountId: SOAK_BOTS.retry.account,
  credits: SOAK_BOTS.retry.credits,
  retryInterrupted: true,
})
class RetryBot extends lib.WebhookBotHost {
  async main(inputs: BotInputs, ctx: BotContext): Promise<BotOutput[]> {
    mark(ctx, 'start');
    const wait = ms(inputs, 1000);
    await sleep(wait, ctx.signal);
    mark(ctx, 'end');
    return [{ title: 'slept', message: String(wait) }];
  }
}

@Module({})
class SoakNodeModule {
  static configure(): DynamicModule {
    return {
      module: SoakNodeModule,
      imports: [
        lib.WebhookTriggerModule.forRoot({
          database: { type: 'postgres', url: env('SOAK_DATABASE_URL') },
          redis: { url: env('SOAK_REDIS_URL'), keyPrefix: 'soak:' },
          runner: redisLib.BullMqBotRunner,
          rateLimitStorage: redisLib.RedisRateLimitStorage,
          clusterBus: redisLib.RedisClusterBus,
          role,
          keySecret: 'soak-key-secret-0123456789abcdef',
          rateLimits: {
            perTrigger: { limit: SOAK_LIMITS.perTrigger, ttlMs: 1_000 },
            perAccount: { limit: SOAK_LIMITS.perAccount, ttlMs: 60_000 },
          },
          syncTimeoutMs: SOAK_TIMINGS.syncTimeoutMs,
          runLeaseMs: SOAK_TIMINGS.runLeaseMs,
          shutdownGraceMs: SOAK_TIMINGS.shutdownGraceMs,
          botTimeoutMs: 60_000,
          maxConcurrentRuns: 32,
          callbackAllowedHosts: ['127.0.0.1'],
          callbackRetryScheduleMs: SOAK_TIMINGS.callbackRetryScheduleMs,
          callbackTimeoutMs: 3_000,
          callbackDisableAfterFailures: 1_000,
        }),
      ],
      providers: [EchoBot, ProbeBot, FailBot, TimeoutBot, LongBot, RetryBot],
    };
  }
}

/** Credits, triggers and callbacks: done once, by the first API node, before the others start. */
async function seed(ctx: INestApplicationContext): Promise<SeedResult> {
  const admin = ctx.get(lib.WebhookTriggersAdmin);
  const receiver = env('SOAK_RECEIVER_URL');
  const credits: Record<string, number> = {};
  for (const [account, amount] of Object.entries(SOAK_LIMITS.credits)) credits[(await admin.setCredits(account, amount)).id] = amount;
  const triggers: SeedResult['triggers'] = [];
  for (const bot of Object.values(SOAK_BOTS)) {
    for (let i = 0; i < bot.triggers; i++) {
      const created = await admin.createTrigger(bot.id, { name: `soak ${bot.id} ${i}` });
      let secret: string | null = null;
      if (i < bot.callbacks) {
        const callback = await admin.setCallback(created.id, { url: `${receiver}/${created.id}` });
        secret = callback!.secret;
      }
      triggers.push({ id: created.id, key: created.key, botId: bot.id, account: bot.account, callbackSecret: secret });
    }
  }
  return { credits, triggers };
}

async function main(): Promise<void> {
  const logger = ['error', 'warn'] as Array<'error' | 'warn'>;
  let ctx: INestApplicationContext;
  if (role === 'worker') {
    ctx = await NestFactory.createApplicationContext(SoakNodeModule.configure(), { logger });
    ctx.enableShutdownHooks();
  } else {
    const app = await NestFactory.create(SoakNodeModule.configure(), { logger });
    // Before listen: SIGTERM then drains (503 to new triggers, sync waiters answered) instead of cutting off.
    app.enableShutdownHooks();
    await app.listen(Number(env('SOAK_PORT')), '127.0.0.1');
    ctx = app;
  }
  const seeded = process.env.SOAK_SEED === '1' ? await seed(ctx) : undefined;
  process.stdout.write(`SOAK_READY ${JSON.stringify({ pid: process.pid, seeded })}\n`);
}

void main().catch((e: unknown) => {
  process.stderr.write(`soak node (${role}) failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
