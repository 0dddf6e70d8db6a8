import { Webhook, WebhookVerificationError as OracleError } from 'standardwebhooks';
import { WebhookConfigurationError, WebhookVerificationError } from '../errors/webhook-trigger.errors.js';
import {
  decodeCallbackSecret,
  generateCallbackSecret,
  generateMessageId,
  signWebhook,
  verifyWebhookSignature,
  webhookHeaders,
} from './standard-webhooks.js';

// The `standardwebhooks` package (the spec authors' reference library, MIT) is the independent oracle: what we
// sign, it verifies; what it signs, we verify; and both refuse the same tampered messages.

const nowSec = () => Math.floor(Date.now() / 1000);
const body = JSON.stringify({
  type: 'invocation.completed',
  timestamp: '2026-11-22T10:00:00.000Z',
  data: { invocation: { id: 'inv_1', outputs: [{ title: 'é ✓', message: 'x' }] } },
});

function oracleHeaders(secret: string, msgId: string, timestampSec: number, payload: string) {
  const signature = new Webhook(secret).sign(msgId, new Date(timestampSec * 1000), payload);
  return { 'webhook-id': msgId, 'webhook-timestamp': String(timestampSec), 'webhook-signature': signature };
}

function refusal(fn: () => unknown): WebhookVerificationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return error as WebhookVerificationError;
  }
  throw new Error('expected a WebhookVerificationError, nothing was thrown');
}

describe('Standard Webhooks secrets and ids', () => {
  it('generates whsec_ secrets of 24 to 64 random bytes (32 by default) that the oracle accepts', () => {
    const secret = generateCallbackSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(decodeCallbackSecret(secret)).toHaveLength(32);
    expect(decodeCallbackSecret(generateCallbackSecret(24))).toHaveLength(24);
    expect(decodeCallbackSecret(generateCallbackSecret(64))).toHaveLength(64);
    expect(generateCallbackSecret()).not.toBe(secret);
    expect(() => generateCallbackSecret(16)).toThrow(RangeError);
    expect(() => generateCallbackSecret(65)).toThrow(RangeError);
    expect(() => new Webhook(secret)).not.toThrow();
  });

  it('accepts a secret with or without the whsec_ prefix, and refuses one that is not base64', () => {
    const secret = generateCallbackSecret();
    expect(decodeCallbackSecret(secret.slice('whsec_'.length))).toEqual(decodeCallbackSecret(secret));
    for (const bad of ['whsec_', 'whsec_not base64!', 'whsec_abc', '']) {
      expect(() => decodeCallbackSecret(bad)).toThrow(WebhookConfigurationError);
    }
  });

  it('makes msg_ ids that are unique and valid for signing', () => {
    const ids = new Set(Array.from({ length: 100 }, generateMessageId));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(id).toMatch(/^msg_[A-Za-z0-9_-]{22}$/);
  });
});

describe('signing (ours signs, the oracle verifies)', () => {
  it('signs "id.timestamp.body" as the oracle does, byte for byte', () => {
    const secret = generateCallbackSecret();
    const msgId = generateMessageId();
    const ts = nowSec();
    expect(signWebhook(secret, msgId, ts, body)).toBe(new Webhook(secret).sign(msgId, new Date(ts * 1000), body));
  });

  it("reproduces the reference libraries' test vector", () => {
    // The test vector the reference libraries (Svix's and Standard Webhooks') check their signing against.
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    expect(signWebhook(secret, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}')).toBe(
      'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    );
  });

  it('gives headers the oracle verifies, for strings and Buffers, and the parsed body comes back', () => {
    const secret = generateCallbackSecret();
    const headers = webhookHeaders(secret, generateMessageId(), nowSec(), body);
    expect(Object.keys(headers)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(secret).verify(Buffer.from(body), webhookHeaders(secret, generateMessageId(), nowSec(), Buffer.from(body)))).toEqual(
      JSON.parse(body),
    );
  });

  it('signs with every secret during a rotation; the oracle accepts with either the old or the new one', () => {
    const [oldSecret, newSecret] = [generateCallbackSecret(), generateCallbackSecret()];
    const headers = webhookHeaders([oldSecret, newSecret], generateMessageId(), nowSec(), body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(oldSecret).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(newSecret).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(generateCallbackSecret()).verify(body, headers)).toThrow(OracleError);
  });

  it('is refused by the oracle when the body, timestamp, id or secret differ', () => {
    const secret = generateCallbackSecret();
    const ts = nowSec();
    const headers = webhookHeaders(secret, 'msg_1', ts, body);
    const hook = new Webhook(secret);
    expect(() => hook.verify(body.replace('inv_1', 'inv_2'), headers)).toThrow(OracleError);
    expect(() => hook.verify(body, { ...headers, 'webhook-timestamp': String(ts - 1) })).toThrow(OracleError);
    expect(() => hook.verify(body, { ...headers, 'webhook-id': 'msg_2' })).toThrow(OracleError);
    expect(() => new Webhook(generateCallbackSecret()).verify(body, headers)).toThrow(OracleError);
    // And too old or too far ahead, even correctly signed (by 10 s more than the oracle's 300: it reads its own
    // clock, a second or so after `ts` on a busy machine).
    expect(() => hook.verify(body, webhookHeaders(secret, 'msg_1', ts - 310, body))).toThrow(OracleError);
    expect(() => hook.verify(body, webhookHeaders(secret, 'msg_1', ts + 310, body))).toThrow(OracleError);
  });

  it('refuses ids with "." (the separator) and bad timestamps rather than sign ambiguous content', () => {
    const secret = generateCallbackSecret();
    expect(() => signWebhook(secret, 'msg.1', nowSec(), body)).toThrow(RangeError);
    expect(() => signWebhook(secret, '', nowSec(), body)).toThrow(RangeError);
    expect(() => signWebhook(secret, 'msg_1', 1.5, body)).toThrow(RangeError);
    expect(() => signWebhook([], 'msg_1', nowSec(), body)).toThrow(WebhookConfigurationError);
  });
});

describe('verifyWebhookSignature (the oracle signs, ours verifies)', () => {
  const secret = generateCallbackSecret();

  it('accepts what the oracle signed and returns the parsed body, from a string, a Buffer or a Uint8Array', () => {
    const headers = oracleHeaders(secret, 'msg_abc', nowSec(), body);
    expect(verifyWebhookSignature(secret, headers, body)).toEqual(JSON.parse(body));
    expect(verifyWebhookSignature(secret, headers, Buffer.from(body))).toEqual(JSON.parse(body));
    expect(verifyWebhookSignature(secret, headers, new TextEncoder().encode(body))).toEqual(JSON.parse(body));
    expect(verifyWebhookSignature(secret, headers, body, { parseJson: false })).toBeUndefined();
  });

  it('reads a fetch Headers, Node arrays, and header names in any case', () => {
    const h = oracleHeaders(secret, 'msg_abc', nowSec(), body);
    expect(verifyWebhookSignature(secret, new Headers(h), body)).toEqual(JSON.parse(body));
    expect(
      verifyWebhookSignature(
        secret,
        { 'Webhook-Id': h['webhook-id'], 'WEBHOOK-TIMESTAMP': h['webhook-timestamp'], 'webhook-signature': [h['webhook-signature']] },
        body,
      ),
    ).toEqual(JSON.parse(body));
    expect(refusal(() => verifyWebhookSignature(secret, { ...h, 'webhook-id': ['msg_a', 'msg_b'] }, body)).reason).toBe('bad_headers');
  });

  it('refuses a tampered body, timestamp or id, and a wrong secret', () => {
    const ts = nowSec();
    const headers = oracleHeaders(secret, 'msg_abc', ts, body);
    const tampered = [
      () => verifyWebhookSignature(secret, headers, body.replace('inv_1', 'inv_2')),
      () => verifyWebhookSignature(secret, headers, `${body} `),
      () => verifyWebhookSignature(secret, { ...headers, 'webhook-timestamp': String(ts + 1) }, body),
      () => verifyWebhookSignature(secret, { ...headers, 'webhook-id': 'msg_abd' }, body),
      () => verifyWebhookSignature(generateCallbackSecret(), headers, body),
    ];
    for (const attempt of tampered) {
      const error = refusal(attempt);
      expect(error.reason).toBe('no_matching_signature');
      expect(error.message).toMatch(/No signature in webhook-signature matches/);
    }
  });

  it('refuses a signature one byte away from the right one, first or last', () => {
    const ts = nowSec();
    const headers = oracleHeaders(secret, 'msg_abc', ts, body);
    const right = Buffer.from(headers['webhook-signature'].slice(3), 'base64');
    for (const at of [0, right.length - 1]) {
      const wrong = Buffer.from(right);
      wrong[at] ^= 1;
      const error = refusal(() =>
        verifyWebhookSignature(secret, { ...headers, 'webhook-signature': `v1,${wrong.toString('base64')}` }, body),
      );
      expect(error.reason).toBe('no_matching_signature');
    }
    expect(verifyWebhookSignature(secret, headers, body)).toEqual(JSON.parse(body));
  });

  it('accepts a timestamp at the tolerance exactly, either way, and refuses one second past it', () => {
    const at = 1_700_000_000;
    const now = at * 1000 + 999; // whole seconds: still `at`
    const verify = (sent: number) => () =>
      verifyWebhookSignature(secret, oracleHeaders(secret, 'msg_edge', sent, body), body, { toleranceSec: 300, now });
    expect(verify(at - 300)()).toEqual(JSON.parse(body));
    expect(verify(at + 300)()).toEqual(JSON.parse(body));
    expect(refusal(verify(at - 301)).reason).toBe('timestamp_too_old');
    expect(refusal(verify(at + 301)).reason).toBe('timestamp_too_new');
  });

  it('refuses timestamps outside the tolerance, in both directions, and takes a tolerance of its own', () => {
    const ts = nowSec();
    const old = refusal(() => verifyWebhookSignature(secret, oracleHeaders(secret, 'msg_1', ts - 400, body), body));
    expect(old.reason).toBe('timestamp_too_old');
    expect(old.message).toMatch(/40\d s old, more than the 300 s tolerated/);
    const ahead = refusal(() => verifyWebhookSignature(secret, oracleHeaders(secret, 'msg_1', ts + 400, body), body));
    expect(ahead.reason).toBe('timestamp_too_new');
    // Within 300 s either way: accepted.
    expect(() => verifyWebhookSignature(secret, oracleHeaders(secret, 'msg_1', ts - 290, body), body)).not.toThrow();
    expect(() => verifyWebhookSignature(secret, oracleHeaders(secret, 'msg_1', ts + 290, body), body)).not.toThrow();
    // A tighter tolerance, and a fixed clock.
    expect(
      refusal(() => verifyWebhookSignature(secret, oracleHeaders(secret, 'msg_1', ts - 60, body), body, { toleranceSec: 30 })).reason,
    ).toBe('timestamp_too_old');
    const at = 1_700_000_000;
    expect(verifyWebhookSignature(secret, oracleHeaders(secret, 'msg_1', at, body), body, { now: at * 1000 + 500 })).toEqual(
      JSON.parse(body),
    );
  });

  it('accepts a header with several signatures when any one matches (rotation), ignoring other schemes', () => {
    const ts = nowSec();
    const mine = oracleHeaders(secret, 'msg_1', ts, body)['webhook-signature'];
    const other = oracleHeaders(generateCallbackSecret(), 'msg_1', ts, body)['webhook-signature'];
    const asym = 'v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg==';
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(ts), 'webhook-signature': `${asym} ${other} ${mine}` };
    expect(verifyWebhookSignature(secret, headers, body)).toEqual(JSON.parse(body));
    // The receiver's own rotation: any of its secrets.
    expect(verifyWebhookSignature([generateCallbackSecret(), secret], oracleHeaders(secret, 'msg_1', ts, body), body)).toEqual(
      JSON.parse(body),
    );
    expect(refusal(() => verifyWebhookSignature(secret, { ...headers, 'webhook-signature': `${asym} ${other}` }, body)).reason).toBe(
      'no_matching_signature',
    );
    expect(refusal(() => verifyWebhookSignature(secret, { ...headers, 'webhook-signature': asym }, body)).message).toMatch(
      /no "v1," signature/,
    );
  });

  it('names the missing headers and refuses malformed ones', () => {
    const h = oracleHeaders(secret, 'msg_1', nowSec(), body);
    const missing = refusal(() => verifyWebhookSignature(secret, { 'webhook-id': h['webhook-id'] }, body));
    expect(missing.reason).toBe('missing_headers');
    expect(missing.message).toBe('Missing webhook header(s): webhook-timestamp, webhook-signature');
    expect(refusal(() => verifyWebhookSignature(secret, { ...h, 'webhook-timestamp': '12abc' }, body)).reason).toBe('bad_headers');
    expect(refusal(() => verifyWebhookSignature(secret, { ...h, 'webhook-timestamp': '-5' }, body)).reason).toBe('bad_headers');
    expect(refusal(() => verifyWebhookSignature(secret, { ...h, 'webhook-id': 'a.b' }, body)).reason).toBe('bad_headers');
  });

  it('verifies the raw bytes: a body that is not JSON passes with parseJson false, and is named when parsed', () => {
    const text = 'plain text, not JSON';
    const headers = oracleHeaders(secret, 'msg_1', nowSec(), text);
    expect(verifyWebhookSignature(secret, headers, text, { parseJson: false })).toBeUndefined();
    expect(refusal(() => verifyWebhookSignature(secret, headers, text)).reason).toBe('body_not_json');
  });

  it('throws a configuration error, not a verification error, for a malformed secret', () => {
    const headers = oracleHeaders(secret, 'msg_1', nowSec(), body);
    expect(() => verifyWebhookSignature('whsec_???', headers, body)).toThrow(WebhookConfigurationError);
    expect(() => verifyWebhookSignature([], headers, body)).toThrow(WebhookConfigurationError);
  });
});
