// @ts-check
// A run's Replay: a new run through the same trigger, with the run's inputs or others.

import { api, errorText, runPath } from './api.js';
import { alertEl, field, fill, h } from './dom.js';
import { runHref } from './routes.js';
import { initialReplayText, parseReplayInputs } from './run-model.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminRunAnswer} AdminRunAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').ReplayedRunAnswer} ReplayedRunAnswer */
/** @typedef {import('./scope.js').Scope} Scope */

const HIDDEN_HINT =
  'Starts a new run through the same trigger, charged as a new run. “Replay” sends this run’s own inputs, unchanged (they are not shown here). To send other inputs, write them here and choose “Replay with these inputs”.';

/**
 * @param {Scope} scope
 * @param {AdminRunAnswer} run
 */
export function replaySection(scope, run) {
  const headingEl = h('h2', { id: 'replay-h' }, 'Replay');
  if (run.trigger && run.trigger.deleted) {
    return h(
      'section',
      { 'aria-labelledby': 'replay-h' },
      headingEl,
      h('p', { class: 'muted' }, 'Its trigger was deleted, so this run cannot be replayed.'),
    );
  }
  return h('section', { 'aria-labelledby': 'replay-h', class: 'card' }, headingEl, replayForm(scope, run));
}

/**
 * With hidden inputs the primary action replays the run's own inputs; the form's submit sends what was written.
 * @param {Scope} scope
 * @param {AdminRunAnswer} run
 */
function replayForm(scope, run) {
  const hidden = run.inputsHidden;
  const textarea = h('textarea', {
    class: 'mono',
    rows: '8',
    spellcheck: 'false',
    autocomplete: 'off',
    value: initialReplayText(run),
    id: 'replay-inputs',
  });
  const errorEl = h('div', { id: 'replay-inputs-error', class: 'field-error' });
  const hint = hidden ? HIDDEN_HINT : 'Starts a new run through the same trigger with these inputs, charged as a new run.';
  const fieldWrap = field(hidden ? 'Other inputs (JSON, optional)' : 'Inputs (JSON)', textarea, hint).wrap;
  textarea.setAttribute('aria-describedby', `${textarea.getAttribute('aria-describedby')} ${errorEl.id}`);
  fieldWrap.append(errorEl);
  const submit = h(
    'button',
    { type: 'submit', class: hidden ? 'button' : 'button primary' },
    hidden ? 'Replay with these inputs' : 'Replay',
  );
  const actions = h('div', { class: 'actions' }, submit);
  const form = h('form', { class: 'replay', novalidate: true, 'aria-labelledby': 'replay-h' }, fieldWrap, actions);
  const clearError = () => {
    errorEl.replaceChildren();
    textarea.removeAttribute('aria-invalid');
  };
  /** @param {string} text */
  const showError = (text) => {
    textarea.setAttribute('aria-invalid', 'true');
    fill(errorEl, alertEl(text));
  };
  /** Sends the replay; `body` without `inputs` replays the run's own inputs (the server still has them). @param {object} body */
  const replay = async (body) => {
    submit.disabled = true;
    try {
      /** @type {ReplayedRunAnswer} */
      const created = await api('POST', `${runPath(run.id)}/replay`, body);
      if (!scope.alive) return;
      location.hash = runHref(created.id);
    } catch (error) {
      if (!scope.alive) return;
      showError(errorText(error));
      submit.disabled = false;
    }
  };
  if (hidden) {
    const same = h('button', { type: 'button', class: 'button primary' }, 'Replay');
    same.addEventListener('click', () => {
      clearError();
      void replay({});
    });
    actions.prepend(same);
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    clearError();
    const parsed = parseReplayInputs(textarea.value, hidden);
    if ('inputs' in parsed) return void replay({ inputs: parsed.inputs });
    showError(parsed.error);
    textarea.focus();
  });
  return form;
}
