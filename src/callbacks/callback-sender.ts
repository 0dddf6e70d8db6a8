import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import {
  CALLBACK_ADDRESS_REFUSED,
  CALLBACK_GONE,
  CALLBACK_NETWORK,
  CALLBACK_REDIRECT,
  CALLBACK_STATUS,
  CALLBACK_TIMEOUT,
  CALLBACK_NO_ADDRESS,
  CALLBACK_NO_ADDRESS_OF_FAMILY,
  CALLBACK_UNEXPECTED_LOOKUP,
} from '../errors/webhook-trigger.messages.js';
import { checkCallbackUrl, isAllowedHost, refusedAddressKind, urlHost } from './callback-address.js';

/** Resolves a host name to all of its addresses (`dns.lookup` with `all: true` by default). */
export type CallbackResolver = (hostname: string) => Promise<LookupAddress[]>;

export interface CallbackRequest {
  url: string;
  /** The Standard Webhooks headers and any others; Content-Type defaults to application/json. */
  headers: Record<string, string>;
  body: string | Buffer;
  /** For DNS, connect, the answer's headers and its body together. @default 15000 */
  timeoutMs?: number;
  /** Hosts called even when private (exact host names or IPs, as written in the URL). @default [] */
  allowedHosts?: readonly string[];
  /** How host names are resolved. @default DNS (c-ares, cancelled at the time-out); `dns.lookup` for `allowedHosts` */
  resolve?: CallbackResolver;
}

/**
 * How one attempt went. `delivered`: a 2xx. `gone`: a 410, the receiver wants no more (disable the callback).
 * `refused`: not sent, the URL or an address it resolves to is not allowed. `failed`: anything else (retry).
 */
export type CallbackOutcome = 'delivered' | 'failed' | 'gone' | 'refused';

export interface CallbackResult {
  ok: boolean;
  outcome: CallbackOutcome;
  /** The receiver's status code, when it answered. */
  status?: number;
  /** From `Retry-After` on a 429, 502, 503 or 504 (seconds or an HTTP date), in whole seconds from now. */
  retryAfterSec?: number;
  latencyMs: number;
  /** What went wrong, for the delivery log. */
  error?: string;
}

const DEFAULT_TIMEOUT_MS = 15_000;
/** Of the answer's body, at most this much is read; the rest is not waited for. */
const MAX_RESPONSE_BYTES = 64 * 1024;
const RETRY_AFTER_STATUSES = new Set([429, 502, 503, 504]);

/**
 * How a host name the operator allowed (`allowedHosts`) is resolved: the system's resolver (`dns.lookup`: /etc/hosts,
 * nsswitch), like the host's other connections.
 */
const lookupAll: CallbackResolver = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))));

/**
 * How any other host name (one a tenant chose) is resolved: by DNS itself (c-ares, on the event loop), its queries
 * cancelled when `signal` fires (the attempt's time-out). `dns.lookup` runs getaddrinfo on one of libuv's four pool
 * threads and cannot be cancelled: a few names whose DNS never answers would hold them for as long as the system
 * resolver retries, long after their attempts gave up, and stall every file, crypto and lookup call of the process
 * (the database's and Redis's reconnects by name among them). `servers`: the DNS servers to ask (a test's).
 */
export async function resolvePublicName(hostname: string, signal: AbortSignal, servers?: string[]): Promise<LookupAddress[]> {
  signal.throwIfAborted();
  const resolver = new Resolver({ timeout: 2_000, tries: 2 });
  if (servers) resolver.setServers(servers);
  const cancel = () => resolver.cancel();
  signal.addEventListener('abort', cancel, { once: true });
  try {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const addresses: LookupAddress[] = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    // A name with addresses of one family only: the other's ENODATA is no failure.
    if (addresses.length === 0 && v4.status === 'rejected') throw v4.reason;
    return addresses;
  } finally {
    signal.removeEventListener('abort', cancel);
  }
}

/** A refusal: carries its own message, never retried into a connection. */
class RefusedError extends Error {}

/**
 * The addresses a host resolved to, each checked: the connection can only be made to one of these. A refused
 * address among them refuses the host (a name that resolves to both a public and a private address is how a
 * rebinding attack is dressed up).
 */
export function checkResolvedAddresses(host: string, addresses: readonly LookupAddress[], allowed: boolean): LookupAddress[] {
  if (addresses.length === 0) throw Object.assign(new Error(CALLBACK_NO_ADDRESS(host)), { code: 'ENOTFOUND' });
  if (!allowed) {
    for (const { address } of addresses) {
      const kind = refusedAddressKind(address);
      if (kind) throw new RefusedError(CALLBACK_ADDRESS_REFUSED(host, address, kind));
    }
  }
  return [...addresses];
}

/**
 * The `lookup` given to http.request: answers the addresses already resolved and checked, never asking DNS again,
 * so what is connected to is what was checked (no rebinding between check and connect). It checks them once more
 * and refuses any other host name.
 */
export function pinnedLookup(host: string, addresses: readonly LookupAddress[], allowed: boolean): LookupFunction {
  return (hostname, options, callback) => {
    let checked: LookupAddress[];
    try {
      if (hostname.toLowerCase() !== host) throw new RefusedError(CALLBACK_UNEXPECTED_LOOKUP(hostname));
      checked = checkResolvedAddresses(host, addresses, allowed);
    } catch (error) {
      callback(error as NodeJS.ErrnoException, '', 0);
      return;
    }
    const family = options.family === 4 || options.family === 6 ? options.family : 0;
    const usable = family ? checked.filter((a) => a.family === family) : checked;
    if (usable.length === 0) {
      const error: NodeJS.ErrnoException = new Error(CALLBACK_NO_ADDRESS_OF_FAMILY(hostname, family));
      error.code = 'ENOTFOUND';
      callback(error, '', 0);
      return;
    }
    if (options.all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
    else callback(null, usable[0].address, usable[0].family);
  };
}

/** `Retry-After` as whole seconds from now: delta-seconds or an HTTP date (a past date is 0). */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  // An HTTP date names its day and month; Date.parse would also take "-5" or "2026" as dates.
  if (!/[a-z]{3}/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * Sends one callback attempt (POST) with SSRF protection: checks the URL (checkCallbackUrl), resolves the host
 * and checks every address it resolves to, then connects only to those (pinnedLookup). Redirects are not followed
 * (a 3xx is a failure). Never throws: every outcome, refusals included, is a result for the delivery log.
 */
export async function sendCallback(request: CallbackRequest): Promise<CallbackResult> {
  const started = performance.now();
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const elapsed = () => Math.round(performance.now() - started);
  const result = (fields: Omit<CallbackResult, 'ok' | 'latencyMs'>): CallbackResult => ({
    ok: fields.outcome === 'delivered',
    ...fields,
    latencyMs: elapsed(),
  });

  const problem = checkCallbackUrl(request.url, request.allowedHosts);
  if (problem) return result({ outcome: 'refused', error: problem });
  const url = new URL(request.url);
  const host = urlHost(url);
  const allowed = isAllowedHost(host, request.allowedHosts);

  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    let lookup: LookupFunction | undefined;
    if (!isIP(host)) {
      // An IP literal is connected to as it is (checked by checkCallbackUrl); a name is resolved once, here.
      const resolve = request.resolve ?? (allowed ? lookupAll : (name: string) => resolvePublicName(name, controller.signal));
      const addresses = await raceAbort(resolve(host), controller.signal);
      lookup = pinnedLookup(host, checkResolvedAddresses(host, addresses, allowed), allowed);
    }
    const response = await post(url, request, lookup, controller.signal);
    const status = response.statusCode ?? 0;
    await drain(response, controller.signal);
    if (status >= 200 && status < 300) return result({ outcome: 'delivered', status });
    if (status === 410) return result({ outcome: 'gone', status, error: CALLBACK_GONE });
    if (status >= 300 && status < 400)
      return result({ outcome: 'failed', status, error: CALLBACK_REDIRECT(status, response.headers.location) });
    const retryAfterSec = RETRY_AFTER_STATUSES.has(status) ? parseRetryAfter(response.headers['retry-after']) : undefined;
    return result({ outcome: 'failed', status, ...(retryAfterSec === undefined ? {} : { retryAfterSec }), error: CALLBACK_STATUS(status) });
  } catch (error) {
    if (controller.signal.aborted) return result({ outcome: 'failed', error: CALLBACK_TIMEOUT(timeoutMs) });
    if (error instanceof RefusedError) return result({ outcome: 'refused', error: error.message });
    return result({ outcome: 'failed', error: CALLBACK_NETWORK(describe(error)) });
  } finally {
    clearTimeout(timer);
  }
}

function post(url: URL, request: CallbackRequest, lookup: LookupFunction | undefined, signal: AbortSignal): Promise<IncomingMessage> {
  const body = typeof request.body === 'string' ? Buffer.from(request.body, 'utf8') : request.body;
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'user-agent': 'nestjs-webhook-triggers',
    ...lowerCaseKeys(request.headers),
    'content-length': body.length,
  };
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(url, {
      method: 'POST',
      headers,
      // A connection of its own each time: no pooled socket, no proxy, only the pinned lookup.
      agent: false,
      signal,
      ...(lookup ? { lookup } : {}),
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(body);
  });
}

/** Reads up to MAX_RESPONSE_BYTES of the answer and drops the rest (and the connection). */
function drain(response: IncomingMessage, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    let read = 0;
    const done = () => {
      signal.removeEventListener('abort', onAbort);
      response.removeAllListeners('data');
      resolve();
    };
    // The status is known: a body that never ends or is cut off changes nothing.
    const onAbort = () => {
      response.destroy();
      done();
    };
    signal.addEventListener('abort', onAbort);
    response.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read > MAX_RESPONSE_BYTES) {
        response.destroy();
        done();
      }
    });
    response.once('end', done);
    response.once('error', done);
    response.once('close', done);
  });
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function lowerCaseKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code && !error.message.includes(code) ? `${code} ${error.message}` : error.message;
  }
  return String(error);
}
