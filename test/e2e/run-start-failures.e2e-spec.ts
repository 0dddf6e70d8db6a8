/**
 * A run that is accepted and charged always starts, whatever fails on the way in this process: its claim meeting
 * a database error (in-process runner), a host's runner whose `dispatch` throws, a host's event listener that
 * throws. The caller is answered 200 with the run's id, and the run ends like any other, charged once, without
 * a restart.
 */
import { Injectable, type LoggerService } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { BotRunner, InvocationRepository, WEBHOOK_EVENTS } from '../../src/index.js';
import type { DispatchedRun } from '../../src/runs/bot-runner.js';
import { InProcessBotRunner } from '../../src/runs/in-process.runner.js';
import { storedCredits, storedInvocations } from '../helpers/db.js';
import { cancelRun, getStatus, startRun, triggerBot, until } from '../helpers/http.js';
import {
  UNTHROTTLED,
  createTrigger,
  describeOnEveryAdapterAndDatabase,
  startWebhookApp,
  type WebhookTestApp,
} from '../helpers/webhook-app.js';

/** Remembers what the module logs as warnings and errors. */
class RecordingLogger implements LoggerService {
  readonly lines: string[] = [];
  log(): void {}
  warn(message: unknown): void {
    this.lines.push(`warn ${String(message)}`);
  }
  error(message: unknown): void {
    this.lines.push(`error ${String(message)}`);
  }
}

/** The in-process runner, but every run goes through `dispatch` (no slot reserved at the accept), the first of which throws. */
@Injectable()
class RunnerThatThrowsOnce extends InProcessBotRunner {
  dispatches = 0;

  override reserve(): null {
    return null;
  }

  override async dispatch(run: DispatchedRun): Promise<void> {
    if (++this.dispatches === 1) throw new Error('the queue is unreachable');
    return super.dispatch(run);
  }
}

describeOnEveryAdapterAndDatabase('runs that fail to start', ({ makeAdapter, database }) => {
  it('dispatches again a run whose claim met a database error: it runs without a restart, charged once', async () => {
    const logger = new RecordingLogger();
    const t = await startWebhookApp(makeAdapter, {
      database,
      options: { rateLimits: UNTHROTTLED, maxConcurrentRuns: 1, shutdownGraceMs: 0 },
      logger,
    });
    try {
      await t.admin.setCredits('acct', 10);
      const slow = await createTrigger(t, 'slow');
      const echo = await createTrigger(t, 'echo');
      // The first claim fails as a dropped connection does; the ones after it reach the database.
      const invocations = t.app.get(InvocationRepository);
      const claim = invocations.markRunning.bind(invocations);
      let claims = 0;
      invocations.markRunning = (...args) =>
        ++claims === 1 ? Promise.reject(new Error('Connection terminated unexpectedly')) : claim(...args);

      // The slow run holds the only slot (stored running at its accept); the echo run waits queued, and is claimed
      // once the slow one is cancelled.
      const holder = await startRun(slow, { ms: 60_000 });
      const id = await startRun(echo, { n: 1 });
      expect((await getStatus(echo, id)).body.invocation.status).toBe('queued');
      expect(claims).toBe(0);
      expect((await cancelRun(slow, holder)).status).toBe(200);
      await until(
        async () => (await getStatus(echo, id)).body.invocation.status === 'succeeded',
        5_000,
        'the run whose claim failed to succeed',
      );

      expect(claims).toBe(2); // the failed claim, then the one that took
      expect((await getStatus(slow, holder)).body.invocation.status).toBe('cancelled');
      expect(await storedCredits(t.store, 'acct')).toBe(8);
      expect((await storedInvocations(t.store, echo.id)).map((r) => r.status)).toEqual(['succeeded']);
      expect(logger.lines.filter((l) => l.includes(id))).toEqual([
        `warn Run ${id} could not be started (Connection terminated unexpectedly, failure 1); dispatching it again in 500 ms`,
      ]);
    } finally {
      await t.close();
    }
  });

  it("answers 200 when the host's runner throws after the accept, and the run starts once its dispatch takes", async () => {
    const logger = new RecordingLogger();
    const t = await startWebhookApp(makeAdapter, {
      database,
      options: { rateLimits: UNTHROTTLED, shutdownGraceMs: 0 },
      extras: { runner: RunnerThatThrowsOnce },
      logger,
    });
    try {
      await t.admin.setCredits('acct', 10);
      const echo = await createTrigger(t, 'echo');
      const res = await triggerBot(echo, { n: 1 });
      expect(res.status).toBe(200);
      const id = res.body.invocation.id as string;
      await until(async () => (await getStatus(echo, id)).body.invocation.status === 'succeeded', 5_000, 'the run to succeed');
      expect(t.app.get<BotRunner, RunnerThatThrowsOnce>(BotRunner).dispatches).toBe(2);
      expect(await storedCredits(t.store, 'acct')).toBe(9);
      expect(logger.lines.filter((l) => l.includes(id))).toEqual([
        `warn Run ${id} could not be started (the queue is unreachable, failure 1); dispatching it again in 500 ms`,
      ]);
    } finally {
      await t.close();
    }
  });

  /** An app with the module's events, logging to `logger`, its account funded with 10 credits. */
  async function startWithEvents(logger: RecordingLogger): Promise<WebhookTestApp> {
    const t = await startWebhookApp(makeAdapter, {
      database,
      options: { rateLimits: UNTHROTTLED, shutdownGraceMs: 0 },
      events: true,
      logger,
    });
    await t.admin.setCredits('acct', 10);
    return t;
  }

  it("runs and answers 200 when a host's listener of the queued and started events throws; the throw is logged", async () => {
    const logger = new RecordingLogger();
    const t = await startWithEvents(logger);
    try {
      const emitter = t.app.get(EventEmitter2);
      for (const name of [WEBHOOK_EVENTS.queued, WEBHOOK_EVENTS.started])
        emitter.on(name, () => {
          throw new Error(`a listener of ${name} failed`);
        });
      const echo = await createTrigger(t, 'echo');
      const res = await triggerBot(echo, { n: 1 });
      expect(res.status).toBe(200);
      const id = res.body.invocation.id as string;
      await until(async () => (await getStatus(echo, id)).body.invocation.status === 'succeeded', 5_000, 'the run to succeed');
      expect(await storedCredits(t.store, 'acct')).toBe(9);
      expect(logger.lines.filter((l) => l.startsWith('error A listener'))).toEqual([
        `error A listener of ${WEBHOOK_EVENTS.queued} threw; ignored`,
        `error A listener of ${WEBHOOK_EVENTS.started} threw; ignored`,
      ]);
    } finally {
      await t.close();
    }
  });

  it("logs a host's async listener that rejects, instead of leaving an unhandled rejection that ends the process", async () => {
    const logger = new RecordingLogger();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const t = await startWithEvents(logger);
    try {
      const emitter = t.app.get(EventEmitter2);
      emitter.on(WEBHOOK_EVENTS.succeeded, async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        throw new Error('the audit service is down');
      });
      const echo = await createTrigger(t, 'echo');
      const res = await triggerBot(echo, { n: 1 });
      expect(res.status).toBe(200);
      const id = res.body.invocation.id as string;
      await until(async () => (await getStatus(echo, id)).body.invocation.status === 'succeeded', 5_000, 'the run to succeed');
      await until(async () => logger.lines.some((l) => l.startsWith('error A listener')), 2_000, 'the rejection to be logged');
      expect(logger.lines.filter((l) => l.startsWith('error A listener'))).toEqual([
        `error A listener of ${WEBHOOK_EVENTS.succeeded} failed; ignored`,
      ]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await t.close();
    }
  });
});
