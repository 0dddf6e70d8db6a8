import { Inject, Injectable, SetMetadata } from '@nestjs/common';
import {
  readWebhookHeaders,
  type ReceivedWebhookHeaders,
  webhookSecretKeys,
  webhookSignatureMatches,
} from '../callbacks/standard-webhooks.js';
import { SecretsAtRest } from '../keys/secrets-at-rest.js';
import { RateLimitedError, SignedRequestRefusedError, WebhookVerificationError } from '../errors/webhook-trigger.errors.js';
import {
  SIGNED_REQUEST_HEADERS_MISSING,
  SIGNED_REQUEST_REPLAYED,
  SIGNED_REQUEST_SIGNATURE_MISMATCH,
  SIGNED_REQUEST_TIMESTAMP_OUTSIDE_WINDOW,
  TOO_MANY_FAILED_KEYS,
  TOO_MANY_UNVERIFIED_BODIES,
} from '../errors/webhook-trigger.messages.js';
import type { RequestSigning, TriggerRecord } from '../persistence/records.js';
import { SigningSecretStore } from '../persistence/signing-secret-store.js';
import { KeyedCounts } from '../rate-limits/held-shares.js';
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
  /** Gives back its place among the client's bodies not verified yet (`instead-of-key`); idempotent. */
  verified: () => void;
}

type SignedRawRequest = RawRequest & { [SIGNED_REQUEST]?: PendingSignature };

const NOTHING_HELD = () => undefined;

/**
 * Signed trigger requests (a trigger's `requestSigning`, Standard Webhooks): in two steps, because the HMAC
 * covers the raw body, which is read only after every guard passed.
 *
 * 1. `beforeBody` (from `TriggerKeyGuard`, headers only; in `with-key` mode only once the key passed, so a
 *    stranger learns nothing of the trigger's rules): the three headers present and well-formed, the timestamp
 *    within ±5 minutes of the module's `Clock`. Refused at once, before a byte of the body is read. In
 *    `instead-of-key` mode, where nothing authenticated the client yet, at most `failedKeyLimit.limit` bodies of one
 *    client address are read at once on a node (each may turn out a failure): the next is 429 before its body.
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
  /** Client addresses' signed bodies being read here, not verified yet (`instead-of-key` only), by failed-key window. */
  private readonly unverified = new KeyedCounts();

  constructor(
    private readonly store: SigningSecretStore,
    private readonly secrets: SecretsAtRest,
    private readonly limits: RateLimitStorage,
    @Inject(Clock) private readonly clock: Clock,
  ) {}

  /** The trigger's signing for this route: `off` for most requests, and on every route but the trigger's. */
  signingOf(trigger: TriggerRecord, handler: object): RequestSigning {
    const mode = trigger.requestSigning ?? 'off';
    return mode === 'off' || Reflect.getMetadata(SIGNED_ROUTE, handler) !== true ? 'off' : mode;
  }

  /**
   * The header checks of a signed request (its trigger's signing not `off`). `instead-of-key`: the signature is the
   * credential, and `admit` counts the request once its body's signature verified.
   */
  async beforeBody(
    trigger: TriggerRecord,
    raw: RawRequest,
    insteadOfKey: boolean,
    failures: RateLimitWindow,
    admit: () => Promise<void>,
  ): Promise<void> {
    // Without a key to check first, a client over its failed-key limit is refused here, before its body is read.
    if (insteadOfKey) await this.checkLockedOut(failures);
    let received: ReceivedWebhookHeaders;
    try {
      received = readWebhookHeaders(raw.headers, { toleranceSec: SIGNED_REQUEST_TOLERANCE_SEC, now: this.clock.now() });
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      return this.refuse(failures, headerMessage(error, raw, this.clock.now()));
    }
    const verified = insteadOfKey ? this.holdUnverified(raw, failures) : NOTHING_HELD;
    (raw as SignedRawRequest)[SIGNED_REQUEST] = { trigger, received, failures, admit: insteadOfKey ? admit : null, verified };
  }

  /**
   * Takes a place among the client address's bodies not verified yet, or refuses (429) when `failures.limit` are
   * being read: no more of them than could each still be judged a failure. Given back once the signature is judged,
   * or when the exchange ends however it ends (the request's `close`: answered, refused, dropped).
   */
  private holdUnverified(raw: RawRequest, failures: RateLimitWindow): () => void {
    if (this.unverified.of(failures.key) >= failures.limit)
      throw new RateLimitedError('client', 1, TOO_MANY_UNVERIFIED_BODIES(failures.limit));
    this.unverified.add(failures.key, 1);
    let givenBack = false;
    const giveBack = () => {
      if (givenBack) return;
      givenBack = true;
      this.unverified.add(failures.key, -1);
    };
    raw.once('close', giveBack);
    if (raw.destroyed) giveBack(); // it left while the guards awaited: its close is past
    return giveBack;
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
    const { trigger, received, failures, admit, verified } = pending;
    const usable = await this.store.usableSecrets(trigger.id, new Date(this.clock.now()));
    const keys = usable.flatMap((s) => {
      const plain = this.secrets.open(s.secret);
      return plain === null ? [] : webhookSecretKeys(plain);
    });
    const matches = webhookSignatureMatches(keys, received, body);
    verified();
    if (!matches) return this.refuse(failures, SIGNED_REQUEST_SIGNATURE_MISMATCH);
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
