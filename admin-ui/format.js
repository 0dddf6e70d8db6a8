// @ts-check
// Text for the screens: numbers, durations, dates, shell commands. Pure functions (unit-tested).

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const numberFormat = new Intl.NumberFormat();

/** What the screens print for a value that is not there. */
export const NONE = '—';

/** The key's stand-in in the curl commands when the key cannot be shown. */
export const KEY_PLACEHOLDER = '<TRIGGER_KEY>';

/**
 * @param {unknown} value
 * @returns {string}
 */
export function formatNumber(value) {
  return typeof value === 'number' ? numberFormat.format(value) : NONE;
}

/**
 * A duration in the largest unit that reads well: `830 ms`, `2.50 s`, `12.0 s`, `3 min 5 s`, `2 h 4 min`.
 * @param {unknown} ms
 * @returns {string}
 */
export function formatDuration(ms) {
  if (typeof ms !== 'number') return NONE;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min ${Math.round(s - min * 60)} s`;
  return `${Math.floor(min / 60)} h ${min % 60} min`;
}

/**
 * An ISO time as the `<time>` element shows it: null when absent; the text as given when it is not a date.
 * @param {string | null | undefined} iso
 * @returns {{ iso: string, text: string } | { iso: null, text: string } | null}
 */
export function formatTime(iso) {
  if (!iso) return null;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return { iso: null, text: String(iso) };
  return { iso: date.toISOString(), text: dateFormat.format(date) };
}

/**
 * A bot's runs of the last 24 hours; the server counts up to `cap`.
 * @param {number} count
 * @param {number} cap
 */
export function formatRecentRuns(count, cap) {
  return count >= cap ? `${formatNumber(cap)} or more` : formatNumber(count);
}

/**
 * One word for a POSIX shell, single-quoted.
 * @param {unknown} value
 */
export function shellQuote(value) {
  return `'${String(value).replace(/'/g, `'\\''`)}'`;
}

/**
 * The two curl commands a trigger's view offers: start a run, and wait for its outputs.
 * @param {string} url the trigger's URL
 * @param {string} key the key, or `KEY_PLACEHOLDER`
 */
export function curlCommands(url, key) {
  const header = shellQuote(`X-Key: ${key}`);
  return {
    trigger: `curl -X POST ${shellQuote(url)} -H ${header} -H 'Content-Type: application/json' -d '{}'`,
    wait: `curl ${shellQuote(`${url}/invocation/<INVOCATION_ID>/sync`)} -H ${header}`,
  };
}

/**
 * A run's error as one line: its message, else its code, else its JSON.
 * @param {{ message?: string, code?: string } | string | null | undefined} error
 * @returns {string}
 */
export function errorMessage(error) {
  if (!error) return '';
  if (typeof error === 'string') return error;
  return error.message || error.code || JSON.stringify(error);
}

const clockFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });

/**
 * The time of day of an ISO time, hours and minutes (an Overview bucket's start), or "—".
 * @param {string | null | undefined} iso
 */
export function formatClock(iso) {
  const date = new Date(iso ?? '');
  return Number.isNaN(date.getTime()) ? NONE : clockFormat.format(date);
}

/**
 * How often an Overview bucket comes: `per minute`, `per 30 minutes`, `per hour`.
 * @param {number} bucketMs
 */
export function formatPer(bucketMs) {
  const minutes = Math.round(bucketMs / 60_000);
  if (minutes === 1) return 'per minute';
  if (minutes === 60) return 'per hour';
  return `per ${minutes} minutes`;
}
