import { Inject, Injectable, SetMetadata } from '@nestjs/common';
import {
  readWebhookHeaders,
  type ReceivedWebhookHeaders,
  webhookSecretKeys,
  webhookSignatureMatches,
} from '../callbacks/standard-webhooks.js';
import { CallbackSecrets } from '../deliveries/callback-outbox.js';
import { RateLimitedError, SignedRequestRefusedError, WebhookVerificationError } from '../errors/webhook-trigger.errors.js';
import {
  SIGNED_REQUEST_HEADERS_MISSING,
  SIGNED_REQUEST_REPLAYED,
  SIGNED_REQUEST_SIGNATURE_MISMATCH,
  SIGNED_REQUEST_TIMESTAMP_OUTSIDE_WINDOW,
  TOO_MANY_FAILED_KEYS,
} from '../errors/webhook-trigger.messages.js';
import type { TriggerRecord } from '../persistence/records.js';
import { SigningSecretStore } from '../persistence/signing-secret-store.js';
import { RateLimitStorage, type RateLimitWindow } from '../rate-limits/rate-limit.storage.js';
import { Clock } from '../time/clock.js';
import type { RawRequest } from './http.types.js';

/** How far a `webhook-timestamp` may be from this server's time, either way (Standard Webhooks' 5 minutes). */
export const SIGNED_REQUEST_TOLERANCE_SEC = 300;
/**
 * How long a `webhook-id` is remembered: the longest its timestamp can stay inside the window (sent up to
 * 5 minutes ahead, accepted until 5 minutes after), so a replay is refused for as long as it could pass.
 */
const REMEMBERED_MS = 2 * SIGNED_REQUEST_TOLERANCE_SEC * 1000;

const SIGNED_ROUTE = 'webhook-trigger:signed-route';
/** Marks the handler whose requests a trigger's `requestSigning` applies to (the trigger route: a sender's POST). */
export const SignedRoute = () => SetMetadata(SIGNED_ROUTE, true);

const SIGNED_REQUEST = Symbol('webhook-trigger:signed-request');

/** What the header checks found, kept on the request until its body is read. */
interface PendingSignature {
  trigger: TriggerRecord;
  received: ReceivedWebhookHeaders;
  failures: RateLimitWindow;
  /** Counts the request in its rate limits: only once the signature verified, when it is the only credential. */
  admit: (() => Promise<void>) | null;
}

type SignedRawRequest = RawRequest & { [SIGNED_REQUEST]?: PendingSignature };

/** What `TriggerKeyGuard` does next. */
export interface SignatureDecision {
  /** False only in `instead-of-key` mode on the trigger route: the signature is the credential. */
  keyRequired: boolean;
  /** True when the guard must NOT count the request yet: it is counted after the body's signature verified. */
  admitsAfterBody: boolean;
}

/** The decision for a trigger without requestSigning, already settled (answered without making a promise). */
const KEY_ONLY_DECIDED: Promise<SignatureDecision> = Promise.resolve({ keyRequired: true, admitsAfterBody: false });

/**
 * Signed trigger requests (a trigger's `requestSigning`, Standard Webhooks): in two steps, because the HMAC
 * covers the raw body, which is read only after every guard passed.
 *
 * 1. `beforeBody` (from `TriggerKeyGuard`, headers only): the three headers present and well-formed, the
 *    timestamp within ±5 minutes of the module's `Clock`. Refused at once, before a byte of the body is read.
 * 2. `acceptSigned` (from the trigger handler, once the body is read, before it is parsed, stored or charged):
 *    one `v1,` signature matches one usable secret (constant time); in `instead-of-key` mode the request is then
 *    counted in its rate limits; last, the `webhook-id` is remembered (on every node sharing the rate-limit
 *    storage), so a forger cannot spend ids and a retried 429 is not taken for a replay. `acceptSigned` gives the
 *    id back when no run is then accepted (a bad body, 402, 503): the sender's retry with the same `webhook-id`
 *    (Standard Webhooks senders retry so) is taken, not refused as a replay.
 *
 * Every refusal counts as a failed key for the client IP (the same window as a wrong X-Key: 429 once full).
 */
@Injectable()
export class SignedRequests {
  constructor(
    private readonly store: SigningSecretStore,
    private readonly secrets: CallbackSecrets,
    private readonly limits: RateLimitStorage,
    @Inject(Clock) private readonly clock: Clock,
  ) {}

  beforeBody(
    trigger: TriggerRecord,
    raw: RawRequest,
    handler: object,
    failures: RateLimitWindow,
    admit: () => Promise<void>,
  ): Promise<SignatureDecision> {
    const mode = trigger.requestSigning ?? 'off';
    if (mode === 'off' || Reflect.getMetadata(SIGNED_ROUTE, handler) !== true) return KEY_ONLY_DECIDED; // most requests
    return this.checkHeaders(trigger, raw, mode === 'instead-of-key', failures, admit);
  }

  private async checkHeaders(
    trigger: TriggerRecord,
    raw: RawRequest,
    insteadOfKey: boolean,
    failures: RateLimitWindow,
    admit: () => Promise<void>,
  ): Promise<SignatureDecision> {
    // Without a key to check first, a client over its failed-key limit is refused here, before its body is read.
    if (insteadOfKey) await this.checkLockedOut(failures);
    let received: ReceivedWebhookHeaders;
    try {
      received = readWebhookHeaders(raw.headers, { toleranceSec: SIGNED_REQUEST_TOLERANCE_SEC, now: this.clock.now() });
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      return this.refuse(failures, headerMessage(error, raw, this.clock.now()));
    }
    (raw as SignedRawRequest)[SIGNED_REQUEST] = { trigger, received, failures, admit: insteadOfKey ? admit : null };
    return { keyRequired: !insteadOfKey, admitsAfterBody: insteadOfKey };
  }

  /**
   * A trigger request's raw body, verified (when `beforeBody` asked for a signature) before `accept` parses and
   * stores it. When `accept` throws, no run was accepted: the `webhook-id` the verification spent is given back.
   */
  acceptSigned<T>(raw: RawRequest, body: Buffer, accept: () => Promise<T>): Promise<T> {
    if ((raw as SignedRawRequest)[SIGNED_REQUEST]) return this.acceptVerified(raw, body, accept);
    try {
      return accept(); // not signed: nothing to verify, no id to give back
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private async acceptVerified<T>(raw: RawRequest, body: Buffer, accept: () => Promise<T>): Promise<T> {
    const spentId = await this.verifyBody(raw, body);
    try {
      return await accept();
    } catch (error) {
      if (spentId !== null) await this.limits.forget(spentId).catch(() => undefined); // the refusal is the answer
      throw error;
    }
  }

  /** Checks the body's signature and spends its `webhook-id`: answers the id's key in the storage, or null when not signed. */
  private async verifyBody(raw: RawRequest, body: Buffer): Promise<string | null> {
    const pending = (raw as SignedRawRequest)[SIGNED_REQUEST];
    if (!pending) return null;
    const { trigger, received, failures, admit } = pending;
    const usable = await this.store.usableSecrets(trigger.id, new Date(this.clock.now()));
    const keys = usable.flatMap((s) => {
      const plain = this.secrets.open(s.secret);
      return plain === null ? [] : webhookSecretKeys(plain);
    });
    if (!webhookSignatureMatches(keys, received, body)) return this.refuse(failures, SIGNED_REQUEST_SIGNATURE_MISMATCH);
    if (admit) await admit();
    const spentId = `signed:${trigger.id}:${received.msgId}`;
    if (!(await this.limits.rememberOnce(spentId, REMEMBERED_MS))) {
      return this.refuse(failures, SIGNED_REQUEST_REPLAYED(REMEMBERED_MS / 1000));
    }
    return spentId;
  }

  private async checkLockedOut(failures: RateLimitWindow): Promise<void> {
    const wait = await this.limits.checkFailures(failures.key, failures.ttl, failures.limit, false);
    if (wait > 0) throw new RateLimitedError('client', wait, TOO_MANY_FAILED_KEYS);
  }

  /** A failed check: counted as a failed key for the client IP; 429 once its window is full, else 401 with `message`. */
  private async refuse(failures: RateLimitWindow, message: string): Promise<never> {
    const wait = await this.limits.checkFailures(failures.key, failures.ttl, failures.limit, true);
    if (wait > 0) throw new RateLimitedError('client', wait, TOO_MANY_FAILED_KEYS);
    throw new SignedRequestRefusedError(message);
  }
}

/** The 401's words for a header check: which headers are missing, or how far the timestamp is off. */
function headerMessage(error: WebhookVerificationError, raw: RawRequest, now: number): string {
  switch (error.reason) {
    case 'missing_headers':
      return SIGNED_REQUEST_HEADERS_MISSING(['webhook-id', 'webhook-timestamp', 'webhook-signature'].filter((name) => !raw.headers[name]));
    case 'timestamp_too_old':
    case 'timestamp_too_new':
      return SIGNED_REQUEST_TIMESTAMP_OUTSIDE_WINDOW(
        Math.abs(Math.floor(now / 1000) - Number(raw.headers['webhook-timestamp'])),
        SIGNED_REQUEST_TOLERANCE_SEC,
      );
    default:
      // A malformed id or timestamp, a repeated header, no `v1,` signature: its own precise words.
      return error.message;
  }
}
