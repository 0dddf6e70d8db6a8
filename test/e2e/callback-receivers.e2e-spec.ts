import { Body, Controller, Headers, HttpCode, Injectable, type LoggerService, Module, Post, UseGuards } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { sendCallback } from '../../src/callbacks/callback-sender.js';
import { generateCallbackSecret, generateMessageId, webhookHeaders } from '../../src/callbacks/standard-webhooks.js';
import { verifyWebhookSignature, WebhookConfigurationError, WebhookSignatureGuard, WebhookVerificationError } from '../../src/index.js';
import { send } from '../helpers/http.js';
import { ADAPTERS } from '../helpers/webhook-app.js';

// WebhookSignatureGuard in a receiver's own Nest app (no webhook module: receivers are other apps), created with
// `rawBody: true` as the docs say, on Express and Fastify. Messages are signed by the standardwebhooks package
// (an independent sender) and by ours.

const SECRET = generateCallbackSecret();
const ROTATED = generateCallbackSecret();

@Injectable()
class ReceiverSecrets {
  current = SECRET;
}

/** The DI route: a subclass that injects what it needs. */
@Injectable()
class InjectedSecretGuard extends WebhookSignatureGuard {
  constructor(private readonly secrets: ReceiverSecrets) {
    super();
  }
  protected secret() {
    return this.secrets.current;
  }
}

@Controller('hooks')
class ReceiverController {
  readonly received: Array<{ route: string; id: string; body: unknown }> = [];

  @Post('static')
  @HttpCode(200)
  @UseGuards(WebhookSignatureGuard.withSecret(SECRET))
  static(@Body() body: unknown, @Headers('webhook-id') id: string) {
    this.received.push({ route: 'static', id, body });
    return { ok: true };
  }

  @Post('factory')
  @HttpCode(200)
  @UseGuards(
    WebhookSignatureGuard.withSecret(async (ref) => [ref.get(ReceiverSecrets, { strict: false }).current, ROTATED], { toleranceSec: 60 }),
  )
  factory(@Body() body: unknown, @Headers('webhook-id') id: string) {
    this.received.push({ route: 'factory', id, body });
    return { ok: true };
  }

  /** A function source whose variable is unset: it answers undefined on each request. */
  @Post('unset')
  @HttpCode(200)
  @UseGuards(WebhookSignatureGuard.withSecret(() => process.env.WEBHOOK_TEST_UNSET_CALLBACK_SECRET!))
  unset() {
    return { ok: true };
  }

  @Post('injected')
  @HttpCode(200)
  @UseGuards(InjectedSecretGuard)
  injected(@Body() body: unknown, @Headers('webhook-id') id: string) {
    this.received.push({ route: 'injected', id, body });
    return { ok: true };
  }
}

@Module({ controllers: [ReceiverController], providers: [ReceiverSecrets] })
class ReceiverModule {}

class RecordingLogger implements LoggerService {
  readonly errors: string[] = [];
  log() {}
  warn() {}
  error(message: unknown, ...rest: unknown[]) {
    this.errors.push([message, ...rest].map(String).join(' '));
  }
}

const body = JSON.stringify({
  type: 'invocation.completed',
  timestamp: '2026-11-22T10:00:00.000Z',
  data: { invocation: { id: 'inv_1', status: 'succeeded' } },
});
const nowSec = () => Math.floor(Date.now() / 1000);

function signedByOracle(secret: string, id: string, timestampSec = nowSec(), payload = body): Record<string, string> {
  const signature = new Webhook(secret).sign(id, new Date(timestampSec * 1000), payload);
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSec), 'webhook-signature': signature };
}

describe.each(ADAPTERS)('WebhookSignatureGuard on %s', (_name, makeAdapter) => {
  let app: INestApplication;
  let baseUrl: string;
  let controller: ReceiverController;
  const logger = new RecordingLogger();

  async function start(rawBody: boolean): Promise<INestApplication> {
    const moduleRef = await Test.createTestingModule({ imports: [ReceiverModule] }).compile();
    const adapter = makeAdapter();
    const created = adapter
      ? moduleRef.createNestApplication(adapter, { rawBody, logger })
      : moduleRef.createNestApplication({ rawBody, logger });
    await created.listen(0, '127.0.0.1');
    return created;
  }

  beforeAll(async () => {
    app = await start(true);
    baseUrl = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
    controller = app.get(ReceiverController);
  });
  afterAll(async () => {
    await app?.close();
  });

  const post = (route: string, headers: Record<string, string>, raw = body) => send('POST', `${baseUrl}/hooks/${route}`, { headers, raw });

  it('lets through a callback signed by the standardwebhooks package, and the handler gets the parsed body', async () => {
    const res = await post('static', signedByOracle(SECRET, 'msg_oracle1'));
    expect(res.status).toBe(200);
    expect(controller.received.at(-1)).toEqual({ route: 'static', id: 'msg_oracle1', body: JSON.parse(body) });
  });

  it('lets through a callback signed by our signer, with the secret from a factory or an injected subclass', async () => {
    const headers = webhookHeaders(SECRET, 'msg_ours1', nowSec(), body);
    expect((await post('static', { ...headers })).status).toBe(200);
    expect((await post('factory', { ...headers })).status).toBe(200);
    expect((await post('injected', { ...headers })).status).toBe(200);
    expect(controller.received.slice(-3).map((r) => r.route)).toEqual(['static', 'factory', 'injected']);
  });

  it('lets through a callback as the sender delivers it (sendCallback with our headers)', async () => {
    const id = generateMessageId();
    const result = await sendCallback({
      url: `${baseUrl}/hooks/injected`,
      headers: { ...webhookHeaders(SECRET, id, nowSec(), body) },
      body,
      allowedHosts: ['127.0.0.1'],
    });
    expect(result).toMatchObject({ ok: true, status: 200 });
    expect(controller.received.at(-1)).toEqual({ route: 'injected', id, body: JSON.parse(body) });
  });

  it('verifies the raw bytes: JSON with other spacing than the parser would produce still passes', async () => {
    const spaced = '{ "type" : "invocation.completed",\n  "data": { "n": 1.50 } }';
    expect((await post('static', signedByOracle(SECRET, 'msg_spaced', nowSec(), spaced), spaced)).status).toBe(200);
  });

  it('answers 401 with the reason for a tampered body, a wrong secret, missing headers and stale or future timestamps', async () => {
    const before = controller.received.length;
    const tampered = await post('static', signedByOracle(SECRET, 'msg_t1'), body.replace('succeeded', 'failed'));
    expect(tampered.status).toBe(401);
    expect(tampered.body.message).toMatch(/No signature in webhook-signature matches/);
    expect((await post('static', signedByOracle(generateCallbackSecret(), 'msg_t2'))).status).toBe(401);
    const missing = await post('static', {});
    expect(missing.status).toBe(401);
    expect(missing.body.message).toBe('Missing webhook header(s): webhook-id, webhook-timestamp, webhook-signature');
    const stale = await post('static', signedByOracle(SECRET, 'msg_t3', nowSec() - 301));
    expect(stale.status).toBe(401);
    expect(stale.body.message).toMatch(/s old, more than the 300 s tolerated/);
    expect((await post('static', signedByOracle(SECRET, 'msg_t4', nowSec() + 301))).status).toBe(401);
    // The factory route's own tolerance (60 s).
    expect((await post('factory', signedByOracle(SECRET, 'msg_t5', nowSec() - 90))).status).toBe(401);
    expect(controller.received.length).toBe(before);
  });

  it("accepts any of the receiver's secrets (its rotation) and any of the sender's signatures (the sender's rotation)", async () => {
    expect((await post('factory', signedByOracle(ROTATED, 'msg_r1'))).status).toBe(200);
    expect((await post('static', signedByOracle(ROTATED, 'msg_r2'))).status).toBe(401);
    const both = webhookHeaders([generateCallbackSecret(), SECRET], 'msg_r3', nowSec(), body);
    expect((await post('static', { ...both })).status).toBe(200);
  });

  it('answers a secret function that gives undefined as a setup error naming the missing secret (500 logged), never a TypeError', async () => {
    logger.errors.length = 0;
    const res = await post('unset', signedByOracle(SECRET, 'msg_unset'));
    expect(res.status).toBe(500);
    expect(controller.received).not.toContainEqual(expect.objectContaining({ id: 'msg_unset' }));
    expect(logger.errors.join('\n')).toMatch(/No webhook secret was given \(undefined or empty\)/);
    expect(logger.errors.join('\n')).not.toMatch(/TypeError|not iterable/);
  });

  it('says clearly when the app was created without rawBody: true (a 500 logged with the fix, not a 401)', async () => {
    const bare = await start(false);
    try {
      const url = (await bare.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
      logger.errors.length = 0;
      const res = await send('POST', `${url}/hooks/static`, { headers: signedByOracle(SECRET, 'msg_bare'), raw: body });
      expect(res.status).toBe(500);
      expect(logger.errors.join('\n')).toMatch(/WebhookSignatureGuard needs the raw request body.*\{ rawBody: true \}/);
    } finally {
      await bare.close();
    }
  });
});

describe('WebhookSignatureGuard.withSecret', () => {
  it.each<[string, unknown]>([
    ['undefined (process.env.X! with X unset)', undefined],
    ['an empty string', ''],
    ['a list with an unset one', [SECRET, undefined]],
    ['an empty list', []],
  ])('refuses %s at once, when the guard is made (so at startup), naming the fix', (_what, secret) => {
    expect(() => WebhookSignatureGuard.withSecret(secret as string)).toThrow(WebhookConfigurationError);
    expect(() => WebhookSignatureGuard.withSecret(secret as string)).toThrow(
      /WebhookSignatureGuard\.withSecret\(\): No webhook secret was given \(undefined or empty\).*whsec_/,
    );
  });

  it('refuses a malformed secret at once too', () => {
    expect(() => WebhookSignatureGuard.withSecret('whsec_???')).toThrow(WebhookConfigurationError);
  });
});

describe('verifyWebhookSignature in a plain Node receiver (from the main entry)', () => {
  it('verifies what the sender delivers and refuses what it did not sign', async () => {
    const outcomes: string[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          const event = verifyWebhookSignature<{ type: string }>(SECRET, req.headers, Buffer.concat(chunks));
          outcomes.push(event.type);
          res.writeHead(204).end();
        } catch (error) {
          outcomes.push(error instanceof WebhookVerificationError ? error.reason : 'other');
          res.writeHead(401).end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const good = await sendCallback({
        url,
        headers: { ...webhookHeaders(SECRET, generateMessageId(), nowSec(), body) },
        body,
        allowedHosts: ['127.0.0.1'],
      });
      expect(good).toMatchObject({ ok: true, status: 204 });
      const forged = await sendCallback({
        url,
        headers: { ...webhookHeaders(ROTATED, generateMessageId(), nowSec(), body) },
        body,
        allowedHosts: ['127.0.0.1'],
      });
      expect(forged).toMatchObject({ ok: false, outcome: 'failed', status: 401 });
      expect(outcomes).toEqual(['invocation.completed', 'no_matching_signature']);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
