// @ts-check
// A trigger's Keys (docs/security.md, "Keys and rotation"): every key not revoked, with its label, when it was
// created and last used, and when it stops working (a rotation's grace end shown as such). "Add key" (a label,
// an optional expiry) shows the new key once; "Revoke" (after a confirm) refuses a key at once. Read-only mode
// lists them only.

import { api, errorText, triggerPath } from './api.js';
import { confirmDialog, copyField } from './dialogs.js';
import {
  alertEl,
  dataTable,
  errorSlot,
  field,
  fill,
  focusEl,
  h,
  heading,
  loadingEl,
  nextId,
  readonlyInput,
  statusLine,
  subsection,
  time,
} from './dom.js';
import { settings } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminTriggerKeyAnswer} AdminTriggerKeyAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').CreatedKeyAnswer} CreatedKeyAnswer */
/** @typedef {import('./trigger-view.js').ShownTrigger} ShownTrigger */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * The section's parts.
 * @typedef {{
 *   scope: Scope,
 *   path: string,
 *   title: HTMLElement,
 *   list: HTMLElement,
 *   created: HTMLElement,
 *   status: HTMLElement,
 *   errors: import('./dom.js').ErrorSlot,
 * }} KeysSection
 */

/**
 * @param {Scope} scope
 * @param {Pick<ShownTrigger, 'id' | 'name'>} trigger
 */
export function keysSection(scope, trigger) {
  /** @type {KeysSection} */
  const section = {
    scope,
    path: `${triggerPath(trigger.id)}/keys`,
    title: heading(4, 'Keys', { id: nextId('keys') }),
    list: h('div', {}, loadingEl()),
    created: h('div', {}),
    status: statusLine(),
    errors: errorSlot(),
  };
  void load(section);
  return subsection(
    section.title,
    h('p', { class: 'hint' }, 'Any of these keys opens the trigger. Revoke one and callers using it get 401 at once.'),
    section.errors.el,
    section.status,
    section.list,
    section.created,
    settings().readOnly ? null : addKeyForm(section),
  );
}

/** @param {KeysSection} section */
async function load(section) {
  try {
    /** @type {AdminTriggerKeyAnswer[]} */
    const keys = await api('GET', section.path);
    if (section.scope.alive) fill(section.list, keysTable(section, keys));
  } catch (error) {
    if (section.scope.alive) fill(section.list, alertEl(errorText(error)));
  }
}

/**
 * @param {KeysSection} section
 * @param {AdminTriggerKeyAnswer[]} keys
 */
function keysTable(section, keys) {
  const readOnly = settings().readOnly;
  const columns = ['Label', 'Created', 'Last used', 'Expires'];
  const table = dataTable('Keys of this trigger, oldest first', readOnly ? columns : [...columns, 'Actions']);
  for (const key of keys) {
    const revoke = h(
      'button',
      { type: 'button', class: 'button small danger-outline', onclick: () => void revokeKey(section, key) },
      'Revoke',
      h('span', { class: 'visually-hidden' }, ` key “${key.label}”`),
    );
    table.tbody.append(
      table.row([key.label, time(key.createdAt), key.lastUsedAt ? time(key.lastUsedAt) : 'Never', expiry(key), readOnly ? null : revoke]),
    );
  }
  return table.table;
}

/**
 * "Never", the time, "Grace ends …" after a rotation, or "Expired …" once past.
 * @param {AdminTriggerKeyAnswer} key
 */
function expiry(key) {
  if (!key.expiresAt) return 'Never';
  if (!key.usable) return h('span', { class: 'error-text' }, key.inGrace ? 'Grace ended ' : 'Expired ', time(key.expiresAt));
  return key.inGrace ? ['Grace ends ', time(key.expiresAt)] : time(key.expiresAt);
}

/**
 * @param {KeysSection} section
 * @param {AdminTriggerKeyAnswer} key
 */
async function revokeKey(section, key) {
  section.errors.clear();
  section.status.textContent = '';
  const ok = await confirmDialog(`Revoke the key “${key.label}”? Callers using it get 401 at once.`, 'Revoke');
  if (!ok || !section.scope.alive) return;
  try {
    await api('DELETE', `${section.path}/${encodeURIComponent(key.id)}`);
    if (!section.scope.alive) return;
    section.status.textContent = `Revoked the key “${key.label}”.`;
    await load(section);
  } catch (error) {
    section.errors.show(error);
  }
}

/**
 * The label and an optional expiry (the browser's local time), and the "Add key" button.
 * @param {KeysSection} section
 */
function addKeyForm(section) {
  const label = h('input', { type: 'text', name: 'label', required: true, maxlength: '200', autocomplete: 'off', spellcheck: 'false' });
  const expires = h('input', { type: 'datetime-local', name: 'expiresAt' });
  const submit = h('button', { type: 'submit', class: 'button' }, 'Add key');
  const form = h(
    'form',
    { class: 'add-key', novalidate: true, 'aria-label': 'Add key' },
    field('New key label', label, 'Shown in this list, e.g. who uses the key.').wrap,
    field('Expires (optional)', expires, 'Leave empty for a key that works until revoked.').wrap,
    h('div', { class: 'actions' }, submit),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void addKey(section, label, expires, submit);
  });
  return form;
}

/**
 * @param {KeysSection} section
 * @param {HTMLInputElement} label
 * @param {HTMLInputElement} expires
 * @param {HTMLButtonElement} submit
 */
async function addKey(section, label, expires, submit) {
  section.errors.clear();
  section.status.textContent = '';
  const text = label.value.trim();
  if (!text) {
    label.setAttribute('aria-invalid', 'true');
    section.errors.show('Give the key a label.');
    label.focus();
    return;
  }
  label.removeAttribute('aria-invalid');
  const expiresAt = expires.value ? new Date(expires.value).toISOString() : null;
  submit.disabled = true;
  try {
    /** @type {CreatedKeyAnswer} */
    const created = await api('POST', section.path, { label: text, expiresAt });
    if (!section.scope.alive) return;
    label.value = '';
    expires.value = '';
    showCreated(section, created);
    await load(section);
  } catch (error) {
    section.errors.show(error);
  } finally {
    submit.disabled = false;
  }
}

/**
 * The new key, once, with a copy button.
 * @param {KeysSection} section
 * @param {CreatedKeyAnswer} created
 */
function showCreated(section, created) {
  const copyStatus = statusLine();
  fill(
    section.created,
    h('p', { class: 'note' }, `Added the key “${created.label}”. Copy it now: this list never shows it.`),
    copyField(`Key “${created.label}”`, readonlyInput(created.key), 'Copy new key', 'key', copyStatus),
    copyStatus,
  );
  focusEl(section.created.querySelector('input'));
}
