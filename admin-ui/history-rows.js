// @ts-check
// A run's row in History.

import { badge, h, time } from './dom.js';
import { errorMessage, formatDuration, formatNumber, NONE } from './format.js';
import { listedOutputs } from './history-query.js';
import { runHref } from './routes.js';
import { isActive } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').ListedRunAnswer} ListedRunAnswer */

/** Outputs listed in a History row; the run detail lists them all. */
const MAX_RESULT_LINES = 3;

export const HISTORY_COLUMNS = ['Invocation', 'Status', 'Trigger', 'Started', 'Duration', 'Credits', 'Result'];

/**
 * Every cell but the first (the run's link).
 * @param {ListedRunAnswer} run
 */
export function runCells(run) {
  return [
    badge(run.status),
    run.triggerName || h('span', { class: 'mono' }, run.triggerId || NONE),
    time(run.createdAt),
    formatDuration(run.durationMs),
    formatNumber(run.credits),
    resultCell(run),
  ];
}

/**
 * A field the list left out for its length (the run's detail has it whole), as a link to that detail.
 * @param {ListedRunAnswer} run
 * @param {string} field
 */
function cutField(run, field) {
  return h('a', { class: 'result-line muted', href: runHref(run.id) }, `${field} too long to list — open the run`);
}

/** @param {ListedRunAnswer} run */
function resultCell(run) {
  if (run.errorTruncated) return cutField(run, 'error');
  if (run.outputsTruncated) return cutField(run, 'outputs');
  if (run.error) {
    const message = errorMessage(run.error);
    return h('span', { class: 'result-line error-text', title: message }, message);
  }
  if (Array.isArray(run.outputs) && run.outputs.length > 0) {
    const { lines, rest } = listedOutputs(run.outputs, MAX_RESULT_LINES);
    return h(
      'div',
      { class: 'result' },
      lines.map((line) => h('span', { class: 'result-line', title: line }, line)),
      rest > 0 ? h('span', { class: 'result-line muted' }, `and ${rest} more — open the run`) : null,
    );
  }
  return isActive(run.status) ? NONE : h('span', { class: 'muted' }, 'no outputs');
}
