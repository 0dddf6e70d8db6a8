// @ts-check
// What a run's detail shows about it: facts, timeline, inputs, outputs, error.

import { badge, fact, h, time } from './dom.js';
import { errorMessage, formatDuration, formatNumber, NONE } from './format.js';
import { timelineOf } from './run-model.js';
import { isActive } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminRunAnswer} AdminRunAnswer */
/** @typedef {import('./dom.js').Child} Child */

/**
 * @param {AdminRunAnswer} run
 * @param {HTMLElement | null} cancel the Cancel button's row, when the run may be cancelled
 * @returns {Child[]}
 */
export function runSummary(run, cancel) {
  return [
    runFacts(run),
    cancel,
    section('timeline-h', 'Timeline', timelineList(run), durationLine(run)),
    section('inputs-h', 'Inputs', inputsView(run)),
    section('outputs-h', 'Outputs', outputsView(run)),
    run.error ? errorSection(run.error) : null,
  ];
}

/**
 * @param {string} id
 * @param {string} title
 * @param {...Child} content
 */
function section(id, title, ...content) {
  return h('section', { 'aria-labelledby': id }, h('h2', { id }, title), ...content);
}

/** @param {AdminRunAnswer} run */
function runFacts(run) {
  const trigger = run.trigger || { id: run.triggerId, name: run.triggerName, deleted: false };
  const triggerName = trigger.name || trigger.id || run.triggerId || NONE;
  return h(
    'dl',
    { class: 'facts' },
    fact('Status', badge(run.status)),
    fact('Trigger', [triggerName, trigger.deleted ? ' (deleted)' : null]),
    fact('Credits charged', formatNumber(run.credits)),
    fact('Idempotency key', run.idempotencyKey || 'none', { class: run.idempotencyKey ? 'mono' : 'muted' }),
    run.accountId ? fact('Account', run.accountId, { class: 'mono' }) : null,
  );
}

/** @param {AdminRunAnswer} run */
function timelineList(run) {
  return h(
    'ol',
    { class: 'timeline' },
    timelineOf(run).map((step) => h('li', {}, badge(step.status), ' at ', time(step.at))),
  );
}

/** @param {AdminRunAnswer} run */
function durationLine(run) {
  if (typeof run.durationMs === 'number') return h('p', {}, `Duration: ${formatDuration(run.durationMs)}`);
  return isActive(run.status) ? h('p', {}, 'Not finished yet.') : null;
}

/** @param {AdminRunAnswer} run */
function inputsView(run) {
  if (run.inputsHidden) {
    return h(
      'p',
      { class: 'muted' },
      'The inputs of runs are not shown in these screens (a setting of this admin). A replay still sends them.',
    );
  }
  if (run.inputs === undefined || run.inputs === null) return h('p', { class: 'muted' }, 'No inputs.');
  return h('pre', { class: 'code', tabindex: '0', 'aria-label': 'Inputs as JSON' }, JSON.stringify(run.inputs, null, 2));
}

/** @param {AdminRunAnswer} run */
function outputsView(run) {
  if (Array.isArray(run.outputs) && run.outputs.length > 0) {
    return h(
      'dl',
      { class: 'outputs' },
      run.outputs.map((o) => h('div', { class: 'output' }, h('dt', {}, String(o && o.title)), h('dd', {}, String(o && o.message)))),
    );
  }
  if (run.outputsTruncated) return h('p', { class: 'muted' }, 'The outputs are too long to list here.');
  return h('p', { class: 'muted' }, isActive(run.status) ? 'No outputs yet.' : 'No outputs.');
}

/** @param {NonNullable<AdminRunAnswer['error']>} error */
function errorSection(error) {
  const code = typeof error === 'object' ? error.code : null;
  return h(
    'section',
    { 'aria-labelledby': 'error-h', class: 'run-error' },
    h('h2', { id: 'error-h' }, 'Error'),
    h(
      'dl',
      { class: 'facts' },
      fact('Message', errorMessage(error), { class: 'pre-wrap' }),
      code ? fact('Code', code, { class: 'mono' }) : null,
    ),
  );
}
