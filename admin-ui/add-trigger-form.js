// @ts-check
// Add Trigger: a button that opens a small form (name, type); Escape or Cancel closes it.

import { api, botPath } from './api.js';
import { errorSlot, field, focusEl, h, nextId } from './dom.js';

/** @typedef {import('../src/admin/admin-api-answers.js').CreatedTriggerAnswer} CreatedTriggerAnswer */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * @param {Scope} scope
 * @param {string} botId
 * @param {(trigger: CreatedTriggerAnswer) => Promise<void>} onCreated after the form closed
 */
export function addTriggerForm(scope, botId, onCreated) {
  const formId = nextId('add-trigger');
  const button = h('button', { type: 'button', class: 'button primary', 'aria-expanded': 'false', 'aria-controls': formId }, 'Add Trigger');
  const nameInput = h('input', { type: 'text', name: 'name', required: true, maxlength: '200', autocomplete: 'off', spellcheck: 'false' });
  const typeSelect = h('select', { name: 'type' }, h('option', { value: 'webhook' }, 'webhook'));
  const formErrors = errorSlot();
  const submit = h('button', { type: 'submit', class: 'button primary' }, 'Create');
  const cancel = h('button', { type: 'button', class: 'button' }, 'Cancel');
  const formHeading = h('h3', { id: nextId('add-trigger-heading') }, 'Add Trigger');
  const form = h(
    'form',
    { id: formId, class: 'card', hidden: true, novalidate: true, 'aria-labelledby': formHeading.id },
    formHeading,
    field('Name', nameInput, 'Any name; it is shown in the list and in History.').wrap,
    field('Type', typeSelect).wrap,
    formErrors.el,
    h('div', { class: 'actions' }, submit, cancel),
  );
  /** @param {boolean} focusButton */
  const close = (focusButton) => {
    form.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    formErrors.clear();
    nameInput.removeAttribute('aria-invalid');
    if (focusButton) focusEl(button);
  };
  button.addEventListener('click', () => {
    if (!form.hidden) return close(true);
    form.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    nameInput.value = '';
    nameInput.focus();
  });
  cancel.addEventListener('click', () => close(true));
  form.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape') return;
    event.preventDefault();
    close(true);
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void create({ scope, botId, nameInput, typeSelect, formErrors, submit, close, onCreated });
  });
  return { button, form };
}

/**
 * Creates the trigger named in the form; on success closes the form, then calls `onCreated`.
 * @param {{
 *   scope: Scope,
 *   botId: string,
 *   nameInput: HTMLInputElement,
 *   typeSelect: HTMLSelectElement,
 *   formErrors: import('./dom.js').ErrorSlot,
 *   submit: HTMLButtonElement,
 *   close: (focusButton: boolean) => void,
 *   onCreated: (trigger: CreatedTriggerAnswer) => Promise<void>,
 * }} form
 */
async function create({ scope, botId, nameInput, typeSelect, formErrors, submit, close, onCreated }) {
  formErrors.clear();
  const name = nameInput.value.trim();
  if (!name) {
    nameInput.setAttribute('aria-invalid', 'true');
    formErrors.show('Give the trigger a name.');
    nameInput.focus();
    return;
  }
  nameInput.removeAttribute('aria-invalid');
  submit.disabled = true;
  try {
    /** @type {CreatedTriggerAnswer} */
    const trigger = await api('POST', `${botPath(botId)}/triggers`, { name, type: typeSelect.value });
    if (!scope.alive) return;
    close(false);
    await onCreated(trigger);
  } catch (error) {
    formErrors.show(error);
  } finally {
    submit.disabled = false;
  }
}
