// @ts-check
// The admin JSON API client (docs/admin.md), its errors, and the errors' words for people.

import { settings } from './settings.js';

/** A failed call: `status` 0 when the server could not be reached. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   * @param {string} method
   */
  constructor(status, message, method) {
    super(message);
    this.status = status;
    this.method = method;
  }
}

/**
 * The `message` of a Nest error body (`{ statusCode, error, message }`; `message` may be a list).
 * @param {unknown} body
 * @returns {string}
 */
export function messageOf(body) {
  if (!body || typeof body !== 'object' || !('message' in body)) return '';
  const { message } = body;
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : '';
}

/**
 * @param {string} text
 * @returns {unknown}
 */
function parseJson(text) {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * The absolute URL of an API path (below `<base>/api`), on the page's origin. Never relative to the page's
 * own URL: opened as `http://user:password@host/admin`, that URL carries credentials, and the browser refuses
 * `fetch` of any URL resolved against it. The origin never has them (the browser keeps sending them as
 * Basic credentials).
 * @param {string} path
 */
export function apiUrl(path) {
  return new URL(settings().api + path, location.origin).href;
}

/**
 * Calls the API: resolves to the answer's JSON (null when it has none), rejects with an `ApiError`. The answer
 * type is the caller's to name (`@type` on the result), from src/admin/admin-api-answers.ts.
 * @param {'GET' | 'POST' | 'PUT' | 'DELETE'} method
 * @param {string} path below `<base>/api`
 * @param {unknown} [body]
 * @returns {Promise<any>}
 */
export async function api(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { Accept: 'application/json' };
  /** @type {RequestInit} */
  const init = { method, credentials: 'same-origin', headers };
  if (method !== 'GET') {
    headers['Content-Type'] = 'application/json';
    headers['X-Webhook-Admin'] = '1';
    // Always a JSON body: some servers (Fastify) refuse an empty body sent as application/json.
    init.body = JSON.stringify(body === undefined ? {} : body);
  }
  let res;
  try {
    res = await fetch(apiUrl(path), init);
  } catch (e) {
    throw new ApiError(0, e instanceof Error ? e.message : String(e), method);
  }
  const text = res.status === 204 ? '' : await res.text().catch(() => '');
  const data = parseJson(text);
  if (!res.ok) throw new ApiError(res.status, messageOf(data) || res.statusText || `HTTP ${res.status}`, method);
  return data;
}

/**
 * What to tell the admin about a failure.
 * @param {unknown} error
 * @returns {string}
 */
export function errorText(error) {
  if (!(error instanceof ApiError)) return `Something went wrong: ${error instanceof Error ? error.message : String(error)}`;
  const { status, message, method } = error;
  if (status === 0) return `Could not reach the server (${message}). Check the connection, then try again.`;
  if (status === 401 || (status === 403 && method === 'GET')) {
    return `You are not signed in, or your admin token is wrong (the server answered ${status}: ${message}).`;
  }
  if (status === 403) {
    return `The server refused this change (it answered 403: ${message}). Changes may be disabled, or you are not signed in as an admin.`;
  }
  if (status >= 500) return `Server error ${status}: ${message}`;
  return message;
}

/**
 * Whether `error` is the API's answer with this status.
 * @param {unknown} error
 * @param {number} status
 */
export function isStatus(error, status) {
  return error instanceof ApiError && error.status === status;
}

/** @param {string} botId */
export const botPath = (botId) => `/bots/${encodeURIComponent(botId)}`;
/** @param {string} triggerId */
export const triggerPath = (triggerId) => `/triggers/${encodeURIComponent(triggerId)}`;
/** @param {string} id */
export const runPath = (id) => `/invocations/${encodeURIComponent(id)}`;
