// @ts-check
// The form that sets a trigger's callback or changes it: its URL and the events to send.

import { errorText, isStatus } from './api.js';
import { alertEl, errorSlot, field, fill, h, nextId } from './dom.js';
import { settings } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminCallbackAnswer} AdminCallbackAnswer */
/** @typedef {import('./scope.js').Scope} Scope */

/** What each event means, in the form's words; the events themselves are the server's (settings). */
const EVENT_MEANINGS = /** @type {Record<string, string>} */ ({
  'invocation.started': 'the run left the queue',
  'invocation.output': 'the bot emitted an output',
  'invocation.completed': 'the run ended',
});

/**
 * The form (`current` null: a new callback). `onSave` PUTs what was written and resolves to the error, or null
 * when saved; `onCancel` adds a Cancel button (and Escape).
 * @param {Scope} scope
 * @param {AdminCallbackAnswer | null} current
 * @param {(url: string, events: string[]) => Promise<unknown>} onSave
 * @param {() => void} [onCancel]
 */
export function callbackForm(scope, current, onSave, onCancel) {
  const urlField = urlInputField(current);
  const { urlInput, errorEl } = urlField;
  const boxes = eventBoxes(current);
  const formErrors = errorSlot();
  const submit = h('button', { type: 'submit', class: 'button primary' }, 'Save callback');
  const form = h(
    'form',
    { class: 'callback-form', novalidate: true, 'aria-label': current ? 'Edit the callback' : 'Set a callback' },
    urlField.wrap,
    h('fieldset', { class: 'events' }, h('legend', {}, 'Events'), boxes.els),
    formErrors.el,
    h('div', { class: 'actions' }, submit, onCancel ? h('button', { type: 'button', class: 'button', onclick: onCancel }, 'Cancel') : null),
  );
  /** @param {string} text */
  const showError = (text) => {
    urlInput.setAttribute('aria-invalid', 'true');
    fill(errorEl, alertEl(text));
  };
  if (onCancel) {
    form.addEventListener('keydown', (event) => {
      if (event.key !== 'Escape') return;
      event.preventDefault();
      onCancel();
    });
  }
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    errorEl.replaceChildren();
    formErrors.clear();
    urlInput.removeAttribute('aria-invalid');
    const url = urlInput.value.trim();
    if (!url) {
      showError('Enter the URL the events are sent to.');
      urlInput.focus();
      return;
    }
    submit.disabled = true;
    const problem = await onSave(url, boxes.chosen());
    if (!scope.alive || !problem) return;
    submit.disabled = false;
    // A refused URL (the SSRF rules) or a bad event is the form's to fix; anything else is said below it.
    if (isStatus(problem, 400)) {
      showError(errorText(problem));
      urlInput.focus();
    } else {
      formErrors.show(problem);
    }
  });
  return form;
}

/** @param {AdminCallbackAnswer | null} current */
function urlInputField(current) {
  const urlInput = h('input', {
    type: 'url',
    name: 'url',
    class: 'mono',
    required: true,
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'https://receiver.example.com/runs',
    value: current ? current.url : '',
  });
  const { wrap } = field(
    'Callback URL',
    urlInput,
    'Each event is POSTed here. Only public addresses are called, unless the host is in callbackAllowedHosts.',
  );
  const errorEl = h('div', { id: `${urlInput.id}-error`, class: 'field-error' });
  urlInput.setAttribute('aria-describedby', `${urlInput.getAttribute('aria-describedby')} ${errorEl.id}`);
  wrap.append(errorEl);
  return { wrap, urlInput, errorEl };
}

/**
 * A checkbox per event the server offers; the always-sent one checked and disabled, with a note why.
 * @param {AdminCallbackAnswer | null} current
 */
function eventBoxes(current) {
  const { callbackEvents, alwaysSentEvent } = settings();
  const chosen = new Set(current && Array.isArray(current.events) ? current.events : [alwaysSentEvent]);
  const note = h('p', { class: 'hint', id: nextId('completed-note') }, `${alwaysSentEvent} is always sent: it carries the run’s result.`);
  const boxes = callbackEvents.map((event) => {
    const always = event === alwaysSentEvent;
    const box = h('input', {
      type: 'checkbox',
      name: 'events',
      value: event,
      checked: always || chosen.has(event),
      disabled: always,
      'aria-describedby': always ? note.id : null,
      id: nextId('event'),
    });
    const meaning = EVENT_MEANINGS[event];
    return {
      event,
      box,
      el: h('div', { class: 'check' }, box, h('label', { for: box.id }, h('code', {}, event), meaning ? ` — ${meaning}` : null)),
    };
  });
  return {
    els: [boxes.map((b) => b.el), note],
    chosen: () => boxes.filter((b) => b.box.checked).map((b) => b.event),
  };
}
