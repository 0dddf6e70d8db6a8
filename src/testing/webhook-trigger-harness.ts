import { Injectable, type INestApplication, RequestMethod } from '@nestjs/common';
import { ApplicationConfig, ModuleRef } from '@nestjs/core';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { WebhookTriggersAdmin } from '../admin/webhook-triggers.admin.js';
import type { BotOutput } from '../bots/bot.types.js';
import type { CallbackEvent, InvocationError, InvocationStatus } from '../persistence/records.js';
import { verifyWebhookSignature } from '../callbacks/standard-webhooks.js';
import { servedPath } from '../http/global-prefix.js';
import { WEBHOOK_ROUTES, WEBHOOKS_PATH } from '../http/webhook-routes.js';
import { TESTING_UNKNOWN_BOT } from '../errors/webhook-trigger.messages.js';
import { InvocationExecutor } from '../runs/invocation.executor.js';
import { CapturingCallbackTransport } from './capturing-callback.transport.js';
import { TestClock } from './test-clock.js';

/** A trigger to call: one the harness made for a bot, or one of yours with its key. */
export interface TestTrigger {
  id: string;
  key: string;
}

/**
 * A JSON answer of the webhook API (docs/http-api.md); which fields it has depends on the route and the status:
 * trigger `{ success, invocation: { id } }`; sync `{ success, outputs }`, or `{ success: false, status, outputs, error }`;
 * status `{ success, invocation, outputs?, error? }`; a refusal `{ success: false, statusCode, error, message }`.
 */
export interface TestAnswerBody {
  success?: boolean;
  invocation?: { id: string; status?: InvocationStatus; createdAt?: string; startedAt?: string | null; finishedAt?: string | null };
  outputs?: BotOutput[];
  /** How a finished run ended (sync), or where a run is (a sync's 408). */
  status?: InvocationStatus;
  /** A run's error, or a refusal's reason phrase (`"Payment Required"`). */
  error?: InvocationError | string | null;
  statusCode?: number;
  message?: string;
  [field: string]: unknown;
}

/** A run as a callback's body shows it (docs/callbacks.md). */
export interface TestCallbackInvocation {
  id: string;
  triggerId: string;
  botId: string;
  status: InvocationStatus;
  outputs: BotOutput[];
  error: InvocationError | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** An HTTP answer, as the caller got it. */
export interface TestAnswer<B = TestAnswerBody> {
  statusCode: number;
  headers: Headers;
  /** The JSON body (every answer of the webhook API is JSON, errors included). */
  body: B;
}

/** One server-sent event of a run's event stream. */
export interface TestRunEvent {
  id: string;
  event: string;
  data: unknown;
}

/** A callback the module delivered during the test, with its Standard Webhooks signature checked. */
export interface TestCallback {
  url: string;
  /** `invocation.completed`, `invocation.started` or `invocation.output`. */
  type: CallbackEvent;
  /** The parsed body: `{ type, timestamp, data: { invocation } }`; an `invocation.output` one also has `data.output: { index }`. */
  body: { type: CallbackEvent; timestamp: string; data: { invocation: TestCallbackInvocation; output?: { index: number } } };
  /** The body exactly as signed and sent: what a receiver of yours verifies (`verifyWebhookSignature`, `WebhookSignatureGuard`). */
  rawBody: string;
  headers: Record<string, string>;
  /** The signature verified against the trigger's callback secret, within the timestamp window when it was received (on the test's clock). */
  verified: boolean;
  /** What the receiver answered (see `answerCallbacksWith`). */
  answeredWith: number;
}

/** The answer to a trigger request, and the calls a caller makes next about its run. */
export class TestRun implements TestAnswer {
  constructor(
    private readonly harness: WebhookTriggerHarness,
    readonly trigger: TestTrigger,
    readonly statusCode: number,
    readonly headers: Headers,
    readonly body: TestAnswerBody,
  ) {}

  /** The invocation id of an accepted run (200); undefined when the trigger was refused. */
  get id(): string | undefined {
    return this.body.invocation?.id;
  }

  /** GET …/sync: waits for the run (on the test's clock: move it to reach a 408). `timeout` in seconds. */
  sync(timeout?: number): Promise<TestAnswer> {
    return this.harness.call('GET', this.path('sync') + (timeout === undefined ? '' : `?timeout=${timeout}`), this.trigger.key);
  }

  /** GET …/invocation/{id}: the run's state at once. */
  status(): Promise<TestAnswer> {
    return this.harness.call('GET', this.path('status'), this.trigger.key);
  }

  /** POST …/cancel. */
  cancel(): Promise<TestAnswer> {
    return this.harness.call('POST', this.path('cancel'), this.trigger.key);
  }

  /** GET …/events until the stream ends (after `done`): every event of the run, in order. */
  events(): Promise<TestRunEvent[]> {
    return this.harness.events(this.path('events'), this.trigger.key);
  }

  private path(route: 'status' | 'sync' | 'cancel' | 'events'): string {
    if (!this.id) throw new Error(`This trigger request was refused (${this.statusCode}): there is no run to ask about`);
    return this.harness.routePath(route, this.trigger.id, this.id);
  }
}

/**
 * Drives the webhook API of an app that imported `WebhookTriggerTestingModule`, over real HTTP on a loopback
 * port of its own: triggers (making a trigger per bot on the fly), sync, status, cancel, events, credits, and
 * the callbacks that were delivered. Get it with `createWebhookTriggerHarness()` (the kit makes the app) or
 * `WebhookTriggerHarness.of(app)` (your app).
 */
@Injectable()
export class WebhookTriggerHarness {
  private baseUrl: string | undefined;
  private readonly botTriggers = new Map<string, Promise<TestTrigger>>();
  private closeApp: (() => Promise<void>) | undefined;

  constructor(
    /** The module's admin service, for anything the harness does not wrap. */
    readonly admin: WebhookTriggersAdmin,
    /** The module's clock: `await harness.clock.tick(ms)` moves time, firing what waits on it. */
    readonly clock: TestClock,
    private readonly transport: CapturingCallbackTransport,
    private readonly moduleRef: ModuleRef,
    private readonly appConfig: ApplicationConfig,
  ) {}

  /**
   * The harness of `app` (which imported `WebhookTriggerTestingModule` and was initialized); it listens on 127.0.0.1
   * if it does not yet, on a port that does not keep the process alive. Close the app in `afterEach` (or `finally`).
   */
  static async of(app: INestApplication): Promise<WebhookTriggerHarness> {
    const harness = app.get(WebhookTriggerHarness);
    await harness.attach(app, false);
    return harness;
  }

  /** Used by `createWebhookTriggerHarness` and `of`: where requests go, and whether `close()` closes the app. */
  async attach(app: INestApplication, owned: boolean): Promise<void> {
    const server = app.getHttpServer() as Server;
    if (!server.listening) {
      await app.listen(0, '127.0.0.1');
      // The port the kit opened holds no spec's runner alive: a spec that fails before its app.close() still ends
      // (Jest reports it and exits); the app's own handles stay the app's to close.
      server.unref();
      server.on('connection', (socket: Socket) => socket.unref());
    }
    this.baseUrl = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    if (owned) this.closeApp = () => app.close();
  }

  /** Closes the app the kit made (nothing when the app is yours). */
  async close(): Promise<void> {
    await this.closeApp?.();
  }

  /**
   * POST …/trigger with `inputs` as the JSON body. `target`: a bot id (the harness makes one trigger per bot, on
   * first use) or a trigger of yours (`{ id, key }`). `key` overrides the key sent (e.g. a wrong one).
   */
  async trigger(
    target: string | TestTrigger,
    inputs: unknown = {},
    options: { idempotencyKey?: string; key?: string; headers?: Record<string, string> } = {},
  ): Promise<TestRun> {
    const trigger = typeof target === 'string' ? await this.triggerOf(target) : target;
    const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    const answer = await this.call(
      'POST',
      this.routePath('trigger', trigger.id),
      options.key ?? trigger.key,
      JSON.stringify(inputs),
      headers,
    );
    return new TestRun(this, trigger, answer.statusCode, answer.headers, answer.body);
  }

  /** The trigger the harness uses for a bot (made on first use, through the admin service). */
  triggerOf(botId: string): Promise<TestTrigger> {
    let trigger = this.botTriggers.get(botId);
    if (!trigger) {
      const known = this.admin.listBots().map((bot) => bot.id);
      if (!known.includes(botId)) return Promise.reject(new Error(TESTING_UNKNOWN_BOT(botId, known)));
      trigger = this.admin.createTrigger(botId, { name: `test ${botId}` }).then((t) => ({ id: t.id, key: t.key }));
      this.botTriggers.set(botId, trigger);
      trigger.catch(() => this.botTriggers.delete(botId));
    }
    return trigger;
  }

  /** An account's credits (null when it was never opened). */
  async credits(accountId: string): Promise<number | null> {
    return (await this.admin.getCredits(accountId))?.credits ?? null;
  }

  /** Sets an account's credits (opening it): `0` to see a trigger answered 402. */
  async setCredits(accountId: string, credits: number): Promise<void> {
    await this.admin.setCredits(accountId, credits);
  }

  /**
   * Gives a trigger (or a bot's trigger) a callback; its deliveries are captured, not sent. Returns the secret
   * the receiver would verify with.
   */
  async setCallback(target: string | TestTrigger, callback: { url?: string; events?: CallbackEvent[] } = {}): Promise<{ secret: string }> {
    const trigger = typeof target === 'string' ? await this.triggerOf(target) : target;
    const view = await this.admin.setCallback(trigger.id, {
      url: callback.url ?? 'https://receiver.test/webhook-runs',
      events: callback.events ?? ['invocation.completed'],
    });
    if (!view?.secret) throw new Error(`Trigger ${trigger.id} is unknown, or its callback secret cannot be shown`);
    return { secret: view.secret };
  }

  /** The status every following callback attempt is answered with (200 by default; 500 to see retries, 410 to disable). */
  answerCallbacksWith(status: number): void {
    this.transport.answerWith(status);
  }

  /** Every callback attempt so far, in order, each with its signature checked against its trigger's secret as its receiver would have, when received. */
  async callbacks(): Promise<TestCallback[]> {
    const secrets = new Map<string, string | null>();
    const secretOf = async (triggerId: string) => {
      if (!secrets.has(triggerId)) secrets.set(triggerId, (await this.admin.getCallback(triggerId))?.secret ?? null);
      return secrets.get(triggerId) ?? null;
    };
    const answer: TestCallback[] = [];
    for (const sent of this.transport.sent) {
      const body = JSON.parse(sent.body) as TestCallback['body'];
      const triggerId = typeof body.data.invocation.triggerId === 'string' ? body.data.invocation.triggerId : '';
      const secret = await secretOf(triggerId);
      let verified = false;
      try {
        verified = secret !== null && verifyWebhookSignature(secret, sent.headers, sent.body, { now: sent.receivedAt }) !== undefined;
      } catch {
        verified = false;
      }
      answer.push({
        url: sent.url,
        type: body.type,
        body,
        rawBody: sent.body,
        headers: sent.headers,
        verified,
        answeredWith: sent.answeredWith,
      });
    }
    return answer;
  }

  /**
   * Resolves once no run is in flight in this app (every bot is over and its outcome stored). A run that waits on
   * the clock (a bot's wait on the module's `Clock`, its time limit) is in flight until the clock passes its wait:
   * `await clock.tick(ms)` first, or this never resolves.
   */
  async idle(): Promise<void> {
    // The executor is the module's own (not exported): found from the app, as a test may.
    await this.moduleRef.get(InvocationExecutor, { strict: false }).idle();
  }

  /** The path the app serves one of the module's routes at: under its global prefix, as Nest's router mounts it. */
  routePath(route: keyof typeof WEBHOOK_ROUTES, triggerId: string, invocationId = ''): string {
    const method = route === 'trigger' || route === 'cancel' ? RequestMethod.POST : RequestMethod.GET;
    return servedPath(this.appConfig, `${WEBHOOKS_PATH}/${WEBHOOK_ROUTES[route]}`, method)
      .replace(':triggerId', () => triggerId)
      .replace(':invocationId', () => invocationId);
  }

  /** Any request to the app (a path from its root), with the trigger key in X-Key when given. */
  async call(method: string, path: string, key?: string, body?: string, headers: Record<string, string> = {}): Promise<TestAnswer> {
    const response = await fetch(this.url(path), { method, body, headers: key === undefined ? headers : { ...headers, 'x-key': key } });
    const text = await response.text();
    let parsed: TestAnswerBody;
    try {
      parsed = text === '' ? {} : (JSON.parse(text) as TestAnswerBody);
    } catch {
      throw new Error(
        `${method} ${path} answered ${response.status} with a body that is not JSON: not the module's answer (${text.slice(0, 120)})`,
      );
    }
    return { statusCode: response.status, headers: response.headers, body: parsed };
  }

  /** Reads an event stream to its end. */
  async events(path: string, key: string): Promise<TestRunEvent[]> {
    const response = await fetch(this.url(path), { headers: { 'x-key': key } });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`The event stream answered ${response.status}: ${text}`);
    return text
      .split('\n\n')
      .map((block) =>
        Object.fromEntries(block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()])),
      )
      .filter((fields: Record<string, string>) => fields.event !== undefined)
      .map((fields: Record<string, string>) => ({
        id: fields.id,
        event: fields.event,
        data: fields.data ? (JSON.parse(fields.data) as unknown) : null,
      }));
  }

  private url(path: string): string {
    if (!this.baseUrl) throw new Error('The harness has no app: use createWebhookTriggerHarness(), or WebhookTriggerHarness.of(app)');
    return this.baseUrl + path;
  }
}
