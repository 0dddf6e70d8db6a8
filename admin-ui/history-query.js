// @ts-check
// The History tab's filters and the query they make. Pure (unit-tested).

/** @typedef {import('../src/admin/admin-api-answers.js').ListedRunAnswer} ListedRunAnswer */

/**
 * The filter form's values (`from` and `to` as a datetime-local input gives them).
 * @typedef {{ status: string, triggerId: string, from: string, to: string, q: string }} HistoryFilters
 */

/** @returns {HistoryFilters} */
export function emptyFilters() {
  return { status: '', triggerId: '', from: '', to: '', q: '' };
}

/** @param {HistoryFilters} f */
export function isFiltered(f) {
  return Boolean(f.status || f.triggerId || f.from || f.to || f.q);
}

/**
 * A datetime-local value (the browser's time zone) as an ISO time; null when empty or not a time.
 * @param {string} local
 */
export function toIso(local) {
  if (!local) return null;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/**
 * The API path of one page of a bot's runs: `before` the id of the last run shown (null: the newest page).
 * @param {string} botPath the bot's API path (`/bots/<id>`)
 * @param {HistoryFilters} filters
 * @param {string | null} before
 * @param {number} pageSize
 */
export function historyQuery(botPath, filters, before, pageSize) {
  const params = new URLSearchParams({ limit: String(pageSize) });
  if (filters.status) params.set('status', filters.status);
  if (filters.triggerId) params.set('triggerId', filters.triggerId);
  const from = toIso(filters.from);
  const to = toIso(filters.to);
  if (from) params.set('from', from);
  if (to) params.set('to', to);
  if (filters.q) params.set('q', filters.q);
  if (before) params.set('before', before);
  return `${botPath}/invocations?${params}`;
}

/**
 * Whether a row would show the same thing for both (a list item and a detail differ in other fields).
 * @param {ListedRunAnswer} a
 * @param {ListedRunAnswer} b
 */
export function sameRun(a, b) {
  /** @param {ListedRunAnswer} r */
  const shown = (r) =>
    JSON.stringify([
      r.status,
      r.triggerName,
      r.triggerId,
      r.createdAt,
      r.durationMs,
      r.credits,
      r.outputs,
      r.outputsTruncated,
      r.error,
      r.errorTruncated,
    ]);
  return shown(a) === shown(b);
}

/**
 * The outputs a History row lists (the run detail lists them all) and how many it leaves out.
 * @param {{ title: string, message: string }[]} outputs
 * @param {number} max
 */
export function listedOutputs(outputs, max) {
  return { lines: outputs.slice(0, max).map((o) => `${o && o.title}: ${o && o.message}`), rest: Math.max(0, outputs.length - max) };
}
