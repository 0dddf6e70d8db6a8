import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { WebhookConfigurationError, WebhookVerificationError } from '../errors/webhook-trigger.errors.js';
import {
  CALLBACK_SECRET_MISSING,
  CALLBACK_SECRET_INVALID,
  WEBHOOK_BODY_NOT_JSON,
  WEBHOOK_HEADER_REPEATED,
  WEBHOOK_HEADERS_MISSING,
  WEBHOOK_ID_INVALID,
  WEBHOOK_NO_V1_SIGNATURE,
  WEBHOOK_SIGNATURE_MISMATCH,
  WEBHOOK_TIMESTAMP_INVALID,
  WEBHOOK_TIMESTAMP_TOO_NEW,
  WEBHOOK_TIMESTAMP_TOO_OLD,
  CALLBACK_SECRET_SIZE,
} from '../errors/webhook-trigger.messages.js';

// Standard Webhooks 1.0, symmetric scheme (spec/standard-webhooks.md in standard-webhooks/standard-webhooks):
// a secret is "whsec_" + base64 of random bytes; the signature is "v1," + base64(HMAC-SHA256(secret bytes,
// "{id}.{timestamp}.{body}")); the header carries one or more of them, space-separated (key rotation).

const CALLBACK_SECRET_PREFIX = 'whsec_';
const MESSAGE_ID_PREFIX = 'msg_';
/** The spec's lower bound (192 bits) and this library's upper one (512 bits). */
const SECRET_BYTES_MIN = 24;
const SECRET_BYTES_MAX = 64;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Visible ASCII without "." (the separator of the signed content), as the spec asks of ids. */
const MESSAGE_ID = /^[\x21-\x2d\x2f-\x7e]{1,255}$/;
const TIMESTAMP = /^\d{1,12}$/;

/** The names of the three headers, as sent (lower case). */
const WEBHOOK_ID_HEADER = 'webhook-id';
const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';

/** One secret, or several during a rotation: signing uses each, verifying accepts any. */
export type WebhookSecrets = string | readonly string[];

/** The headers of one delivery. */
export interface StandardWebhookHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** A new signing secret: `whsec_` + base64 of `bytes` random bytes (24 to 64; 32 by default). */
export function generateCallbackSecret(bytes = 32): string {
  if (!Number.isInteger(bytes) || bytes < SECRET_BYTES_MIN || bytes > SECRET_BYTES_MAX) {
    throw new RangeError(CALLBACK_SECRET_SIZE(SECRET_BYTES_MIN, SECRET_BYTES_MAX, bytes));
  }
  return CALLBACK_SECRET_PREFIX + randomBytes(bytes).toString('base64');
}

/** A new message id, `msg_` + 16 random bytes (base64url): stable across the retries of one delivery. */
export function generateMessageId(): string {
  return MESSAGE_ID_PREFIX + randomBytes(16).toString('base64url');
}

/**
 * The key bytes of a secret: `whsec_<base64>` or the base64 alone (as other producers hand it out). Any
 * non-empty key is accepted for verifying (the spec bounds what producers generate, not what receivers take).
 */
export function decodeCallbackSecret(secret: string): Buffer {
  // `process.env.X!` with X unset, or an empty X=: the setup lacks the secret, which says more than "malformed".
  if (secret === undefined || secret === null || secret === '') throw new WebhookConfigurationError(CALLBACK_SECRET_MISSING);
  const encoded =
    typeof secret === 'string' && secret.startsWith(CALLBACK_SECRET_PREFIX) ? secret.slice(CALLBACK_SECRET_PREFIX.length) : secret;
  if (typeof encoded !== 'string' || encoded.length % 4 !== 0 || !BASE64.test(encoded)) {
    throw new WebhookConfigurationError(CALLBACK_SECRET_INVALID);
  }
  return Buffer.from(encoded, 'base64');
}

function toBuffer(body: string | Buffer | Uint8Array): Buffer {
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  return Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

function hmac(key: Buffer, msgId: string, timestampSec: number | string, body: Buffer): Buffer {
  return createHmac('sha256', key).update(`${msgId}.${timestampSec}.`, 'utf8').update(body).digest();
}

function secretList(secrets: WebhookSecrets): string[] {
  // Neither a string nor a list (a secret function that answered undefined): a setup error, never a TypeError.
  const iterable = typeof (secrets as Iterable<string> | undefined)?.[Symbol.iterator] === 'function';
  if (!iterable) throw new WebhookConfigurationError(CALLBACK_SECRET_MISSING);
  const list = typeof secrets === 'string' ? [secrets] : [...secrets];
  if (list.length === 0) throw new WebhookConfigurationError(CALLBACK_SECRET_MISSING);
  return list;
}

/**
 * The `webhook-signature` value for one message: `v1,<base64 signature>`, one per secret, space-separated
 * (several during a rotation). The body is signed as the exact bytes sent.
 */
export function signWebhook(secrets: WebhookSecrets, msgId: string, timestampSec: number, body: string | Buffer): string {
  if (!MESSAGE_ID.test(msgId)) throw new RangeError(WEBHOOK_ID_INVALID);
  if (!Number.isSafeInteger(timestampSec) || timestampSec < 0) throw new RangeError(WEBHOOK_TIMESTAMP_INVALID);
  const bytes = toBuffer(body);
  return secretList(secrets)
    .map((secret) => `v1,${hmac(decodeCallbackSecret(secret), msgId, timestampSec, bytes).toString('base64')}`)
    .join(' ');
}

/** The three Standard Webhooks headers of one delivery attempt. */
export function webhookHeaders(
  secrets: WebhookSecrets,
  msgId: string,
  timestampSec: number,
  body: string | Buffer,
): StandardWebhookHeaders {
  return {
    [WEBHOOK_ID_HEADER]: msgId,
    [WEBHOOK_TIMESTAMP_HEADER]: String(timestampSec),
    [WEBHOOK_SIGNATURE_HEADER]: signWebhook(secrets, msgId, timestampSec, body),
  };
}

/** Request headers as Node gives them (`req.headers`), as a fetch `Headers`, or as a plain record. */
export type WebhookHeadersInput = IncomingHttpHeaders | Headers | Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /** How far the timestamp may be from now, either way, in seconds. @default 300 */
  toleranceSec?: number;
  /** Parse the body as JSON and return it; `false` returns undefined and accepts any body. @default true */
  parseJson?: boolean;
  /** The current time in ms since the epoch (tests). @default Date.now() */
  now?: number;
}

function headerOf(headers: WebhookHeadersInput, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function' && typeof (headers as Headers).has === 'function') {
    return (headers as Headers).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  let value = record[name];
  if (value === undefined) {
    // Node lower-cases header names; a hand-made record may not.
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : record[key];
  }
  if (Array.isArray(value)) {
    // Several signature headers are one list; several ids or timestamps are ambiguous.
    if (name === WEBHOOK_SIGNATURE_HEADER) return value.join(' ');
    if (value.length > 1) throw new WebhookVerificationError('bad_headers', WEBHOOK_HEADER_REPEATED(name));
    return value[0];
  }
  return value;
}

/** The key bytes of one or several secrets (a malformed one throws `WebhookConfigurationError`). */
export function webhookSecretKeys(secrets: WebhookSecrets): Buffer[] {
  return secretList(secrets).map(decodeCallbackSecret);
}

/** What the three headers of a received message say, once they were found well-formed and timely. */
export interface ReceivedWebhookHeaders {
  msgId: string;
  /** The header's digits, exactly as sent (what was signed). */
  timestamp: string;
  /** The decoded `v1,` signatures (at least one). */
  signatures: Buffer[];
}

/**
 * The checks a receiver makes from the headers alone, before the body is read: all three present, the id and
 * timestamp well-formed, the timestamp within `toleranceSec` of `now` (both ways), at least one `v1,` signature.
 * Throws a `WebhookVerificationError` saying which failed.
 */
export function readWebhookHeaders(headers: WebhookHeadersInput, { toleranceSec = 300, now = Date.now() } = {}): ReceivedWebhookHeaders {
  const msgId = headerOf(headers, WEBHOOK_ID_HEADER);
  const timestamp = headerOf(headers, WEBHOOK_TIMESTAMP_HEADER);
  const signatures = headerOf(headers, WEBHOOK_SIGNATURE_HEADER);
  const missing = [
    [WEBHOOK_ID_HEADER, msgId],
    [WEBHOOK_TIMESTAMP_HEADER, timestamp],
    [WEBHOOK_SIGNATURE_HEADER, signatures],
  ].flatMap(([name, value]) => (value ? [] : [name!]));
  if (missing.length > 0) throw new WebhookVerificationError('missing_headers', WEBHOOK_HEADERS_MISSING(missing));
  if (!MESSAGE_ID.test(msgId!)) throw new WebhookVerificationError('bad_headers', WEBHOOK_ID_INVALID);
  if (!TIMESTAMP.test(timestamp!)) throw new WebhookVerificationError('bad_headers', WEBHOOK_TIMESTAMP_INVALID);

  const nowSec = Math.floor(now / 1000);
  const sentSec = Number(timestamp);
  if (nowSec - sentSec > toleranceSec) {
    throw new WebhookVerificationError('timestamp_too_old', WEBHOOK_TIMESTAMP_TOO_OLD(nowSec - sentSec, toleranceSec));
  }
  if (sentSec - nowSec > toleranceSec) {
    throw new WebhookVerificationError('timestamp_too_new', WEBHOOK_TIMESTAMP_TOO_NEW(sentSec - nowSec, toleranceSec));
  }

  const presented = signatures!
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => Buffer.from(s.slice(3), 'base64'));
  if (presented.length === 0) throw new WebhookVerificationError('no_matching_signature', WEBHOOK_NO_V1_SIGNATURE);
  return { msgId: msgId!, timestamp: timestamp!, signatures: presented };
}

/**
 * True when one of the received signatures is the HMAC of the body with one of `keys`. Every pair is compared
 * in constant time, with no early exit, so the time taken says nothing about which part matched.
 */
export function webhookSignatureMatches(
  keys: readonly Buffer[],
  received: ReceivedWebhookHeaders,
  rawBody: string | Buffer | Uint8Array,
): boolean {
  const body = toBuffer(rawBody);
  // Signed with the timestamp exactly as sent (the header's digits), as the spec's content is defined.
  const expected = keys.map((key) => hmac(key, received.msgId, received.timestamp, body));
  let matched = false;
  for (const want of expected) {
    for (const got of received.signatures) {
      if (got.length === want.length && timingSafeEqual(got, want)) matched = true;
    }
  }
  return matched;
}

/**
 * Verifies a received Standard Webhooks message, for receivers of this library's callbacks (or any producer
 * following the spec's symmetric scheme), and returns its parsed JSON body.
 *
 * - `secret`: the `whsec_…` secret the admin was shown; an array accepts any of several (your own rotation).
 * - `headers`: `req.headers` (Node, Express, Fastify) or a fetch `Headers`.
 * - `rawBody`: the body EXACTLY as received (a Buffer or string): JSON parsed and serialized again no longer
 *   matches the signature. With NestJS, create the app with `{ rawBody: true }` and use `req.rawBody`.
 *
 * Checks that the timestamp is within `toleranceSec` of now (both ways: replays and skewed clocks), then that
 * at least one `v1,` signature of the header matches, comparing in constant time. Throws a
 * `WebhookVerificationError` (with a `reason` and a message saying what was wrong) when anything fails.
 * A malformed secret throws `WebhookConfigurationError` (the receiver's setup is wrong, not the message).
 * Use `webhook-id` as an idempotency key: a delivery may come more than once.
 */
export function verifyWebhookSignature<T = unknown>(
  secret: WebhookSecrets,
  headers: WebhookHeadersInput,
  rawBody: string | Buffer | Uint8Array,
  { toleranceSec = 300, parseJson = true, now = Date.now() }: VerifyWebhookOptions = {},
): T {
  const keys = webhookSecretKeys(secret);
  const received = readWebhookHeaders(headers, { toleranceSec, now });
  const body = toBuffer(rawBody);
  if (!webhookSignatureMatches(keys, received, body)) {
    throw new WebhookVerificationError('no_matching_signature', WEBHOOK_SIGNATURE_MISMATCH);
  }
  if (!parseJson) return undefined as T;
  try {
    return JSON.parse(body.toString('utf8')) as T;
  } catch {
    throw new WebhookVerificationError('body_not_json', WEBHOOK_BODY_NOT_JSON);
  }
}
