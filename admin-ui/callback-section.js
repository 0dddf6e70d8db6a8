// @ts-check
// A trigger's signed Callback (docs/callbacks.md): its URL, events, state and secret, with Edit, Rotate
// secret and Remove; or, when it has none, a form to set one. Read-only mode shows it without a way to change it.

import { api, errorText, triggerPath } from './api.js';
import { callbackForm } from './callback-form.js';
import { confirmDialog, copyField } from './dialogs.js';
import { alertEl, errorSlot, fact, fill, focusEl, h, heading, loadingEl, nextId, readonlyInput, statusLine, subsection } from './dom.js';
import { formatNumber } from './format.js';
import { settings } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminCallbackAnswer} AdminCallbackAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').ViewedTriggerAnswer} ViewedTriggerAnswer */
/** @typedef {import('./trigger-view.js').ShownTrigger} ShownTrigger */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * The section's parts and state.
 * @typedef {{
 *   scope: Scope,
 *   trigger: ShownTrigger,
 *   deliveries: { watch(on: boolean): void },
 *   path: string,
 *   title: HTMLElement,
 *   body: HTMLElement,
 *   status: HTMLElement,
 *   copyStatus: HTMLElement,
 *   errors: import('./dom.js').ErrorSlot,
 *   known: string | null,
 * }} CallbackSection
 */

/**
 * `deliveries` (the log below) is told whether a callback is set, so it follows new runs live only then.
 * @param {Scope} scope
 * @param {ShownTrigger} trigger
 * @param {{ watch(on: boolean): void }} deliveries
 */
export function callbackSection(scope, trigger, deliveries) {
  /** @type {CallbackSection} */
  const section = {
    scope,
    trigger,
    deliveries,
    path: `${triggerPath(trigger.id)}/callback`,
    title: heading(4, 'Callback', { id: nextId('callback') }),
    body: h('div', {}, loadingEl()),
    status: statusLine(),
    copyStatus: statusLine(),
    errors: errorSlot(),
    known: null, // the secret as last shown: without keySecret the API shows it only when set or rotated
  };
  void load(section);
  return subsection(section.title, section.errors.el, section.status, section.body);
}

/** @param {CallbackSection} section */
async function load(section) {
  const { trigger, scope } = section;
  try {
    // The trigger as GET …/triggers/:id answers carries its callback (null when none): no 404 to ask for.
    /** @type {ShownTrigger} */
    const full = 'callback' in trigger ? trigger : await api('GET', triggerPath(trigger.id));
    if (!scope.alive) return;
    if (full && full.callback) showSet(section, full.callback);
    else showNone(section);
  } catch (error) {
    if (scope.alive) fill(section.body, alertEl(errorText(error)));
  }
}

/** @param {CallbackSection} section */
function showNone(section) {
  section.known = null;
  section.deliveries.watch(false);
  if (settings().readOnly) {
    fill(section.body, h('p', { class: 'muted' }, 'No callback: the runs of this trigger are not sent anywhere.'));
    return;
  }
  fill(
    section.body,
    h('p', { class: 'hint' }, 'Set a URL, and each run’s events are POSTed to it, signed with a secret (Standard Webhooks).'),
    callbackForm(section.scope, null, (url, events) => save(section, url, events, 'Set the callback. Give its secret to the receiver.')),
  );
}

/**
 * @param {CallbackSection} section
 * @param {AdminCallbackAnswer} callback
 */
function showSet(section, callback) {
  // Without keySecret a changed callback comes back without its secret: the one shown here still signs.
  if (typeof callback.secret === 'string' && callback.secret) section.known = callback.secret;
  section.deliveries.watch(callback.enabled);
  const facts = callbackFacts(callback);
  const secretEl = secretField(section);
  if (settings().readOnly) {
    fill(section.body, facts, secretEl, section.copyStatus);
    return;
  }
  const enableNote = callback.enabled
    ? null
    : h(
        'p',
        { class: 'note' },
        'No deliveries are made while the callback is disabled. ',
        h('button', { type: 'button', class: 'button small', onclick: () => void enable(section, callback) }, 'Enable callback'),
      );
  fill(section.body, facts, enableNote, secretEl, section.copyStatus, changeControls(section, callback));
}

/** @param {AdminCallbackAnswer} callback */
function callbackFacts(callback) {
  const state = callback.enabled ? 'Enabled' : `Disabled${callback.disabledReason ? `: ${callback.disabledReason}` : ''}`;
  const failures =
    callback.consecutiveFailures > 0
      ? h('p', { class: 'hint' }, `${formatNumber(callback.consecutiveFailures)} deliveries in a row used up their retries.`)
      : null;
  const events = (Array.isArray(callback.events) ? callback.events : []).map((event, i) => [i > 0 ? ', ' : null, h('code', {}, event)]);
  return h(
    'dl',
    { class: 'facts' },
    fact('Callback URL', callback.url, { class: 'mono' }),
    fact('Events', events),
    fact('State', [state, failures], { class: callback.enabled ? '' : 'error-text' }),
  );
}

/** @param {CallbackSection} section */
function secretField(section) {
  if (!section.known) {
    return h(
      'div',
      { class: 'field' },
      h('p', { class: 'label-like' }, 'Secret'),
      h('p', { class: 'note' }, 'The secret is shown only when the callback is set or its secret rotated.'),
    );
  }
  return [
    copyField('Secret', readonlyInput(section.known), 'Copy secret', 'secret', section.copyStatus),
    h(
      'p',
      { class: 'hint' },
      'Give the secret to the receiver: it checks each delivery’s ',
      h('code', {}, 'webhook-signature'),
      ' with it. Keep it secret.',
    ),
  ];
}

/**
 * Edit callback (opens the form below), Rotate secret, Remove callback.
 * @param {CallbackSection} section
 * @param {AdminCallbackAnswer} callback
 */
function changeControls(section, callback) {
  const edit = h('button', { type: 'button', class: 'button', 'aria-expanded': 'false' }, 'Edit callback');
  const rotate = h('button', { type: 'button', class: 'button' }, 'Rotate secret');
  const remove = h('button', { type: 'button', class: 'button danger-outline' }, 'Remove callback');
  const form = callbackForm(
    section.scope,
    callback,
    (url, events) => save(section, url, events, 'Saved the callback.'),
    () => {
      form.hidden = true;
      edit.setAttribute('aria-expanded', 'false');
      focusEl(edit);
    },
  );
  form.id = nextId('callback-form');
  form.hidden = true;
  edit.setAttribute('aria-controls', form.id);
  edit.addEventListener('click', () => {
    form.hidden = !form.hidden;
    edit.setAttribute('aria-expanded', String(!form.hidden));
    if (!form.hidden) focusEl(form.querySelector('input'));
  });
  rotate.addEventListener('click', () => void rotateSecret(section));
  remove.addEventListener('click', () => void removeCallback(section));
  return [h('div', { class: 'actions' }, edit, rotate, remove), form];
}

/**
 * PUTs the callback; on success shows it and says `done`, otherwise returns the error (null when done).
 * @param {CallbackSection} section
 * @param {string} url
 * @param {string[]} events
 * @param {string} done
 * @returns {Promise<unknown>}
 */
async function save(section, url, events, done) {
  section.errors.clear();
  section.status.textContent = '';
  try {
    /** @type {AdminCallbackAnswer} */
    const saved = await api('PUT', section.path, { url, events });
    if (!section.scope.alive) return null;
    showSet(section, saved);
    section.status.textContent = done;
    focusEl(section.title);
    return null;
  } catch (error) {
    return error;
  }
}

/**
 * Setting a disabled callback again enables it, its failures forgotten.
 * @param {CallbackSection} section
 * @param {AdminCallbackAnswer} callback
 */
async function enable(section, callback) {
  const problem = await save(section, callback.url, callback.events, 'Enabled the callback again.');
  if (problem && section.scope.alive) section.errors.show(problem);
}

/** @param {CallbackSection} section */
async function rotateSecret(section) {
  section.errors.clear();
  section.status.textContent = '';
  const ok = await confirmDialog(
    `Rotate the callback secret of “${section.trigger.name}”? Deliveries from now on are signed with the new secret only.`,
    'Rotate secret',
  );
  if (!ok || !section.scope.alive) return;
  try {
    /** @type {AdminCallbackAnswer} */
    const rotated = await api('POST', `${section.path}/rotate-secret`);
    if (!section.scope.alive) return;
    showSet(section, rotated);
    section.status.textContent = 'Rotated the secret: give the new one to the receiver.';
    focusEl(section.title);
  } catch (error) {
    if (section.scope.alive) section.errors.show(error);
  }
}

/** @param {CallbackSection} section */
async function removeCallback(section) {
  section.errors.clear();
  section.status.textContent = '';
  const ok = await confirmDialog(
    `Remove the callback of “${section.trigger.name}”? Its runs are no longer sent, and pending deliveries are dropped.`,
    'Remove callback',
  );
  if (!ok || !section.scope.alive) return;
  try {
    await api('DELETE', section.path);
    if (!section.scope.alive) return;
    showNone(section);
    section.status.textContent = 'Removed the callback.';
    focusEl(section.title);
  } catch (error) {
    if (section.scope.alive) section.errors.show(error);
  }
}
