import { request as httpRequest, STATUS_CODES, type Agent, type ClientRequest } from 'node:http';
import type { TestTrigger } from './webhook-app.js';

export interface HttpResult {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined when the body was not JSON. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers of any shape; the tests assert on them
  body: any;
  text: string;
  /** From sending the request to having read the whole answer. */
  elapsedMs: number;
}

/** fetch, with the body read and parsed and the time it took. */
export async function request(url: string, init: RequestInit = {}): Promise<HttpResult> {
  const t0 = performance.now();
  const res = await fetch(url, init);
  const text = await res.text();
  const elapsedMs = performance.now() - t0;
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, body, text, elapsedMs };
}

/**
 * `request` with a JSON body: `json` (stringified) or `raw` (sent as is), both as application/json unless the
 * headers say otherwise. A body that is not JSON (an HTML page, an empty 204) comes back as its text.
 */
export async function send(
  method: string,
  url: string,
  options: { headers?: Record<string, string>; json?: unknown; raw?: string } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined;
  if (options.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.raw !== undefined) {
    headers['Content-Type'] ??= 'application/json';
    body = options.raw;
  }
  const res = await request(url, { method, headers, body });
  const isJson = (res.headers.get('content-type') ?? '').includes('json') && res.text !== '';
  return isJson ? res : { ...res, body: res.text };
}

export interface TriggerCall {
  /** The X-Key value; `null` sends no X-Key header. @default the trigger's key */
  key?: string | null;
  /** Extra headers (e.g. Idempotency-Key, or a Content-Type that replaces the JSON one). */
  headers?: Record<string, string>;
  /** Sent as is instead of `JSON.stringify(inputs)`; a Uint8Array goes out with no Content-Type. */
  raw?: string | Uint8Array;
}

/** POST /webhooks/:triggerId/trigger */
export function triggerBot(t: Pick<TestTrigger, 'url' | 'key'>, inputs: unknown = {}, call: TriggerCall = {}): Promise<HttpResult> {
  const key = call.key === undefined ? t.key : call.key;
  const headers: Record<string, string> = {};
  if (call.raw === undefined || typeof call.raw === 'string') headers['content-type'] = 'application/json';
  if (key !== null) headers['x-key'] = key;
  Object.assign(headers, call.headers);
  return request(t.url, { method: 'POST', headers, body: call.raw ?? JSON.stringify(inputs) });
}

/** `{trigger url}/invocation/{invocationId}/sync` */
const syncUrl = (t: Pick<TestTrigger, 'url'>, invocationId: string) => `${t.url}/invocation/${invocationId}/sync`;

/** GET /webhooks/:triggerId/trigger/invocation/:invocationId/sync */
export function syncInvocation(
  t: Pick<TestTrigger, 'url' | 'key'>,
  invocationId: string,
  init: { key?: string | null; signal?: AbortSignal } = {},
): Promise<HttpResult> {
  const key = init.key === undefined ? t.key : init.key;
  return request(syncUrl(t, invocationId), { headers: key === null ? {} : { 'x-key': key }, signal: init.signal });
}

/** Triggers and returns the invocation id, failing the test unless the answer was 200. */
export async function startRun(t: TestTrigger, inputs: unknown = {}, call: TriggerCall = {}): Promise<string> {
  const res = await triggerBot(t, inputs, call);
  if (res.status !== 200) throw new Error(`expected 200 from the trigger endpoint, got ${res.status}: ${res.text}`);
  return res.body.invocation.id as string;
}

/** Every non-2xx answer of the webhook API is JSON `{ success: false, statusCode, error, message }` and nothing else. */
export function expectError(res: HttpResult, status: number): void {
  if (res.status !== status) throw new Error(`expected HTTP ${status}, got ${res.status}: ${res.text}`);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  // A sync 408 also says where the run is (`status`); no other error carries extra fields.
  const { status: runStatus, ...shape } = res.body;
  expect(shape).toEqual({ success: false, statusCode: status, error: STATUS_CODES[status], message: expect.any(String) });
  if (status === 408) expect(['queued', 'running']).toContain(runStatus);
  else expect(runStatus).toBeUndefined();
  expect(res.body.message.length).toBeGreaterThan(0);
  expect(res.text).not.toMatch(/stack|\n\s+at /);
}

/** An admin API error (docs/admin.md): Nest's shape `{ statusCode, error, message }`, with nothing else. */
export function expectAdminError(res: HttpResult, status: number): void {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: { statusCode: status, error: STATUS_CODES[status], message: expect.any(String) },
  });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Re-checks `probe` every 10 ms until it returns true, failing after `timeoutMs`. */
export async function until(probe: () => boolean | Promise<boolean>, timeoutMs = 2_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

export interface RawResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers of any shape; the tests assert on them
  body: any;
  text: string;
}

/**
 * A request through node:http, for what fetch cannot express: header names sent exactly as spelled,
 * a chunked body with no Content-Length, and a chosen source address (`localAddress`, e.g. `127.0.0.7`
 * towards `http://127.0.0.1:…`: another client IP for per-IP limits).
 */
export function rawRequest(
  url: string,
  opts: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    chunks?: Array<string | Buffer>;
    localAddress?: string;
  } = {},
): Promise<RawResult> {
  const req = httpRequest(url, { method: opts.method ?? 'GET', headers: opts.headers, localAddress: opts.localAddress });
  const result = rawResultOf(req);
  if (opts.chunks) for (const c of opts.chunks) req.write(c);
  req.end(opts.body);
  return result;
}

/** The answer to a request made with `node:http`, read whole once it ended (its body parsed when it is JSON). */
function rawResultOf(req: ClientRequest): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, body, text });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** Calls sync again while it answers 408, as the spec tells clients to. */
export async function syncUntilFinished(t: Pick<TestTrigger, 'url' | 'key'>, invocationId: string, attempts = 20): Promise<HttpResult> {
  let res = await syncInvocation(t, invocationId);
  for (let i = 1; i < attempts && res.status === 408; i++) res = await syncInvocation(t, invocationId);
  return res;
}

const keyHeaders = (t: Pick<TestTrigger, 'key'>, key: string | null | undefined): Record<string, string> => {
  const k = key === undefined ? t.key : key;
  return k === null ? {} : { 'x-key': k };
};

/** GET /webhooks/:triggerId/trigger/invocation/:invocationId (the run's state, answered at once) */
export function getStatus(
  t: Pick<TestTrigger, 'url' | 'key'>,
  invocationId: string,
  key?: string | null,
  headers: Record<string, string> = {},
): Promise<HttpResult> {
  return request(`${t.url}/invocation/${invocationId}`, { headers: { ...keyHeaders(t, key), ...headers } });
}

/** POST /webhooks/:triggerId/trigger/invocation/:invocationId/cancel */
export function cancelRun(
  t: Pick<TestTrigger, 'url' | 'key'>,
  invocationId: string,
  key?: string | null,
  init: { headers?: Record<string, string>; body?: string } = {},
): Promise<HttpResult> {
  return request(`${t.url}/invocation/${invocationId}/cancel`, {
    method: 'POST',
    headers: { ...keyHeaders(t, key), ...init.headers },
    body: init.body,
  });
}

/** GET …/sync?timeout=<timeout> */
export function syncWithTimeout(t: Pick<TestTrigger, 'url' | 'key'>, invocationId: string, timeout: string): Promise<HttpResult> {
  return request(`${syncUrl(t, invocationId)}?timeout=${timeout}`, { headers: keyHeaders(t, undefined) });
}

/** Nothing that looks like a stack trace or a source location anywhere in the body. */
export function expectNoStack(res: Pick<HttpResult, 'text'>): void {
  expect(res.text).not.toMatch(/stack|\n\s+at |\bat .*\(|\.[tj]s:\d+/);
}

/** Re-checks `check` every 25 ms until it returns a value (not undefined), failing after `ms`. */
export async function eventually<T>(what: string, ms: number, check: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${ms} ms waiting for: ${what}`);
    await sleep(25);
  }
}

/** A timestamp as the API writes it (`createdAt`, `startedAt`, `finishedAt`). */
export const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
/** The `error` of a cancelled run. */
export const CANCELLED_ERROR = { message: 'The run was cancelled', code: 'cancelled' };
/** The `error` of a run stopped at its time limit of `ms`. */
export const TIMEOUT_ERROR = (ms: number) => ({ message: `The bot did not finish within ${ms} ms`, code: 'timeout' });

/** A raw response's status, Connection header and body, once it ended. */
export interface RawAnswer {
  status: number;
  connection: string;
  body: string;
}

/** The answer to a request made with `node:http` (e.g. on a kept-alive agent, its body written in parts). */
export async function rawAnswerOf(req: ClientRequest): Promise<RawAnswer> {
  const { status, headers, text } = await rawResultOf(req);
  return { status, connection: String(headers.connection), body: text };
}

/** A trigger request on `agent` (e.g. one kept alive) whose body of `bytes` bytes the caller writes, in parts if it likes. */
export function triggerOnAgent(agent: Agent, t: Pick<TestTrigger, 'url' | 'key'>, bytes: number): ClientRequest {
  return httpRequest(t.url, {
    method: 'POST',
    agent,
    headers: { 'content-type': 'application/json', 'x-key': t.key, 'content-length': String(bytes) },
  });
}
