// @ts-check
// The hash routes: #/ (Bots), #/bots/:botId/settings, #/bots/:botId/history, #/invocations/:id, #/audit and
// #/audit/triggers/:triggerId (the audit log, of one trigger), #/overview and #/overview/day. Pure.

/** @typedef {'settings' | 'history'} BotTab */
/** @typedef {'hour' | 'day'} OverviewWindow */

/**
 * @typedef {{ kind: 'bots' }
 *   | { kind: 'bot', botId: string, tab: BotTab }
 *   | { kind: 'redirect', hash: string }
 *   | { kind: 'run', id: string }
 *   | { kind: 'audit', triggerId?: string }
 *   | { kind: 'overview', window: OverviewWindow }
 *   | { kind: 'not-found' }} Route
 */

/**
 * The path of a location hash (`#/bots/x/history` → `/bots/x/history`; empty → `/`).
 * @param {string} hash
 */
export function hashPath(hash) {
  const path = hash.replace(/^#/, '');
  return path === '' ? '/' : path;
}

/**
 * A URL part decoded, or as it is when it is not valid percent-encoding.
 * @param {string} part
 */
export function decodePart(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/**
 * The screen a path shows.
 * @param {string} path
 * @returns {Route}
 */
export function parseRoute(path) {
  if (path === '/' || path === '/bots' || path === '/bots/') return { kind: 'bots' };
  const bot = path.match(/^\/bots\/([^/]+)\/(settings|history)\/?$/);
  if (bot) return { kind: 'bot', botId: decodePart(bot[1]), tab: /** @type {BotTab} */ (bot[2]) };
  if (/^\/bots\/([^/]+)\/?$/.test(path)) return { kind: 'redirect', hash: `#${path.replace(/\/?$/, '/settings')}` };
  const audit = path.match(/^\/audit(?:\/triggers\/([^/]+))?\/?$/);
  if (audit) return audit[1] ? { kind: 'audit', triggerId: decodePart(audit[1]) } : { kind: 'audit' };
  const overview = path.match(/^\/overview(?:\/(day|hour))?\/?$/);
  if (overview) return { kind: 'overview', window: overview[1] === 'day' ? 'day' : 'hour' };
  const run = path.match(/^\/invocations\/([^/]+)\/?$/);
  if (run) return { kind: 'run', id: decodePart(run[1]) };
  return { kind: 'not-found' };
}

/**
 * @param {string} botId
 * @param {BotTab} tab
 */
export function botHref(botId, tab) {
  return `#/bots/${encodeURIComponent(botId)}/${tab}`;
}

/** @param {string} id */
export function runHref(id) {
  return `#/invocations/${encodeURIComponent(id)}`;
}

/** The audit log, of one trigger when given. @param {string} [triggerId] */
export function auditHref(triggerId) {
  return triggerId ? `#/audit/triggers/${encodeURIComponent(triggerId)}` : '#/audit';
}

/** The Overview of a window (the last hour by default). @param {OverviewWindow} [window] */
export function overviewHref(window = 'hour') {
  return window === 'hour' ? '#/overview' : `#/overview/${window}`;
}
