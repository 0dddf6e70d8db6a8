// @ts-check
// #/overview and #/overview/day: every node's runs over the last hour (by minute) or day (by half hour), read from
// the database (docs/admin.md "Overview"): figures for the window and now, runs finished per bucket by status
// (stacked bars), p50/p95 of run duration and of queue wait (lines), each chart with its numbers in a table.

import { api } from './api.js';
import { barChart, lineChart } from './chart.js';
import { dataTable, errorSlot, fact, fill, h, heading, nextId, statusLine } from './dom.js';
import { formatClock, formatDuration, formatNumber, formatPer, NONE } from './format.js';
import { loading, render, renderFailure, setTitle } from './page.js';
import { overviewHref } from './routes.js';
import { settings } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').RunsOverviewAnswer} RunsOverviewAnswer */
/** @typedef {RunsOverviewAnswer['buckets'][number]} BucketAnswer */
/** @typedef {RunsOverviewAnswer['durationMs']} PercentilesAnswer */
/** @typedef {import('./routes.js').OverviewWindow} OverviewWindow */
/** @typedef {import('./scope.js').Scope} Scope */

/** @type {Record<OverviewWindow, string>} */
const WINDOW_NAMES = { hour: 'Last hour', day: 'Last day' };

/** The statuses a run finishes in, in the server's order (the bars stack in it). */
function finishedStatuses() {
  return settings().statuses.filter((s) => !settings().active.has(s));
}

/**
 * A status in words: `timed_out` → `Timed out`.
 * @param {string} status
 */
export function statusLabel(status) {
  const words = status.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * p50 and p95 in words, or "—" when the window had no such runs.
 * @param {PercentilesAnswer} p
 */
export function percentilesText(p) {
  return p ? `${formatDuration(p.p50)} / ${formatDuration(p.p95)}` : NONE;
}

/**
 * The window switch: two links, the current one marked for assistive technology.
 * @param {OverviewWindow} current
 */
function windowSwitch(current) {
  return h(
    'nav',
    { class: 'window-switch', 'aria-label': 'Window' },
    /** @type {OverviewWindow[]} */ (['hour', 'day']).map((w) =>
      h('a', { href: overviewHref(w), 'aria-current': w === current ? 'page' : null }, WINDOW_NAMES[w]),
    ),
  );
}

/**
 * @param {Scope} scope
 * @param {OverviewWindow} window
 */
export async function showOverview(scope, window) {
  const title = `Overview: ${WINDOW_NAMES[window].toLowerCase()}`;
  loading(title);
  const body = h('div', { class: 'overview' });
  const status = statusLine();
  const errors = errorSlot();
  const refresh = h('button', { type: 'button', class: 'button' }, 'Refresh');

  /**
   * Reads the window and draws it; what went wrong, shown in the error slot, or null.
   * @returns {Promise<unknown>}
   */
  async function load() {
    refresh.disabled = true;
    try {
      /** @type {RunsOverviewAnswer} */
      const overview = await api('GET', `/overview?window=${window}`);
      if (!scope.alive) return null;
      errors.clear();
      fill(body, ...overviewParts(overview));
      status.textContent = `Read at ${new Date().toLocaleTimeString()}, from the database: every node's runs.`;
      return null;
    } catch (error) {
      if (scope.alive) errors.show(error);
      return error ?? new Error('no answer');
    } finally {
      refresh.disabled = false;
    }
  }
  refresh.addEventListener('click', () => void load());

  const failed = await load();
  if (failed) {
    if (scope.alive) renderFailure(title, failed);
    return;
  }
  if (!scope.alive) return;
  setTitle(title);
  render(heading(1, 'Overview'), h('div', { class: 'heading-row' }, windowSwitch(window), refresh), errors.el, status, body);
}

/**
 * The figures and the three charts of one answer.
 * @param {RunsOverviewAnswer} o
 */
function overviewParts(o) {
  const statuses = finishedStatuses();
  const per = formatPer(o.bucketMs);
  const labels = o.buckets.map((b) => formatClock(b.start));
  const countsOf = (/** @type {{ finished: BucketAnswer['finished'] }} */ b) => /** @type {Record<string, number>} */ (b.finished);
  const finished = countsOf(o);
  const total = statuses.reduce((sum, s) => sum + (finished[s] ?? 0), 0);
  const span = `${formatClock(o.from)} to ${formatClock(o.to)}`;
  const byStatus = statuses.map((s) => `${formatNumber(finished[s] ?? 0)} ${statusLabel(s).toLowerCase()}`);

  const figures = h(
    'dl',
    { class: 'facts inline overview-figures' },
    fact('Runs finished', formatNumber(total)),
    statuses.map((s) => fact(statusLabel(s), formatNumber(finished[s] ?? 0))),
    fact('Queued now', formatNumber(o.backlog.queued)),
    fact('Running now', formatNumber(o.backlog.running)),
    fact('Duration p50 / p95', percentilesText(o.durationMs)),
    fact('Queue wait p50 / p95', percentilesText(o.queueWaitMs)),
  );
  const callbacks = h(
    'dl',
    { class: 'facts inline overview-figures' },
    fact('Deliveries failed', formatNumber(o.callbacks.failedDeliveries)),
    fact('Deliveries waiting for a retry', formatNumber(o.callbacks.retryingDeliveries)),
    fact('Callbacks disabled', formatNumber(o.callbacks.disabledCallbacks)),
  );

  const runsChart = barChart({
    title: `Runs finished ${per}, by status`,
    description: `${span}: ${formatNumber(total)} runs finished (${byStatus.join(', ')}).`,
    labels,
    formatValue: formatNumber,
    counts: o.buckets.map(countsOf),
    keys: statuses,
    keyLabel: statusLabel,
  });
  const runsTable = dataTable(`Runs finished ${per}, by status`, ['From', ...statuses.map(statusLabel)]);
  o.buckets.forEach((b, i) =>
    runsTable.tbody.append(runsTable.row([labels[i], ...statuses.map((s) => formatNumber(countsOf(b)[s] ?? 0))])),
  );

  return [
    figureSection('Runs', figures),
    figureSection('Callbacks', callbacks),
    chartSection(`Runs finished ${per}`, runsChart, legend(statuses.map((s) => [s, statusLabel(s)])), runsTable.table),
    percentileSection('Run duration', 'started to finished, runs finished', o, labels, 'durationMs', span),
    percentileSection('Queue wait', 'accepted to started, runs started', o, labels, 'queueWaitMs', span),
  ];
}

/**
 * Figures under their heading.
 * @param {string} title
 * @param {HTMLElement} figures
 */
function figureSection(title, figures) {
  const titleEl = heading(2, title, { id: nextId('overview') });
  return h('section', { class: 'subsection', 'aria-labelledby': titleEl.id }, titleEl, figures);
}

/**
 * A chart of p50 and p95 per bucket, with its table.
 * @param {string} name
 * @param {string} what
 * @param {RunsOverviewAnswer} o
 * @param {string[]} labels
 * @param {'durationMs' | 'queueWaitMs'} field
 * @param {string} span
 */
function percentileSection(name, what, o, labels, field, span) {
  const per = formatPer(o.bucketMs);
  const series = [
    { key: 'p50', label: 'p50', values: o.buckets.map((b) => b[field]?.p50 ?? null) },
    { key: 'p95', label: 'p95', values: o.buckets.map((b) => b[field]?.p95 ?? null) },
  ];
  const whole = o[field];
  const chart = lineChart({
    title: `${name} ${per}, p50 and p95`,
    description: whole
      ? `${span} (${what} in each bucket): p50 ${formatDuration(whole.p50)}, p95 ${formatDuration(whole.p95)} over the window.`
      : `${span}: no runs to measure.`,
    labels,
    formatValue: formatDuration,
    series,
  });
  const table = dataTable(`${name} ${per}`, ['From', 'p50', 'p95']);
  o.buckets.forEach((b, i) => {
    const p = b[field];
    table.tbody.append(table.row([labels[i], p ? formatDuration(p.p50) : NONE, p ? formatDuration(p.p95) : NONE]));
  });
  return chartSection(
    `${name} ${per}`,
    chart,
    legend([
      ['p50', 'p50 (median)'],
      ['p95', 'p95'],
    ]),
    table.table,
  );
}

/**
 * A chart under its heading, with its legend and its numbers as a table (folded).
 * @param {string} title
 * @param {SVGElement} chart
 * @param {HTMLElement} legendEl
 * @param {HTMLTableElement} table
 */
function chartSection(title, chart, legendEl, table) {
  const titleEl = heading(2, title, { id: nextId('overview') });
  return h(
    'section',
    { class: 'subsection chart-section', 'aria-labelledby': titleEl.id },
    titleEl,
    h('div', { class: 'chart-wrap' }, chart),
    legendEl,
    h('details', { class: 'chart-table' }, h('summary', {}, `${title} as a table`), h('div', { class: 'table-wrap' }, table)),
  );
}

/**
 * The colours' key: a swatch (drawn by its class) and a name per series.
 * @param {Array<[string, string]>} entries
 */
function legend(entries) {
  return h(
    'ul',
    { class: 'legend' },
    entries.map(([key, name]) => h('li', {}, h('span', { class: `swatch chart-${key}`, 'aria-hidden': 'true' }), name)),
  );
}
