import type { IncomingHttpHeaders } from 'node:http';

/** A Host value: a name or IPv4 address, or a bracketed IPv6 address, with an optional port; nothing else. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** What Express 5 and Fastify 5 requests both carry (`protocol` and `host` honour their trust-proxy settings). */
interface OriginRequest {
  protocol?: unknown;
  host?: unknown;
  headers?: { host?: unknown };
}

/**
 * `http(s)://host[:port]` of the request, as the client addressed it: the adapter's `protocol` and `host`,
 * which follow `X-Forwarded-Proto` / `X-Forwarded-Host` only when the host app trusts its proxy (Express
 * `app.set('trust proxy', …)`, Fastify `trustProxy`); else the `Host` header. Undefined when the host is
 * absent or not a plain host name (nothing from it is then put in a URL).
 */
export function requestOrigin(request: unknown): string | undefined {
  const r = (request ?? {}) as OriginRequest;
  const host = typeof r.host === 'string' && r.host !== '' ? r.host : r.headers?.host;
  if (typeof host !== 'string' || !HOST.test(host)) return undefined;
  return `${r.protocol === 'https' ? 'https' : 'http'}://${host}`;
}

/**
 * Whether a browser says this request was sent by a page of another origin: `Sec-Fetch-Site` when the browser
 * sends it (anything but `same-origin` or `none`, a typed address), else `Origin` against the `Host` (or the
 * first `X-Forwarded-Host`). A request with neither is not a browser's cross-origin request (browsers send
 * `Origin` on every cross-origin POST): a script or curl. What the admin API's change guard refuses, and what a
 * host's own forms (a sign-in, a sign-out) should refuse so that a page elsewhere cannot post them.
 */
export function isCrossSiteRequest(headers: IncomingHttpHeaders): boolean {
  const site = headers['sec-fetch-site'];
  if (typeof site === 'string') return site !== 'same-origin' && site !== 'none';
  const origin = headers.origin;
  if (origin === undefined) return false;
  const host = headers['x-forwarded-host'] ?? headers.host;
  try {
    return new URL(origin).host !== String(host).split(',')[0].trim();
  } catch {
    return true; // `Origin: null` (a sandboxed or privacy-sensitive context) or garbage
  }
}
