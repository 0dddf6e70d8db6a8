// @ts-check
// Confirmations (native <dialog>) and copying to the clipboard.

import { field, h, nextId } from './dom.js';

/** @type {Set<HTMLDialogElement>} */
const openDialogs = new Set();

/** Answers every open question with "Keep it" (leaving a screen, e.g. with the Back button). */
export function closeDialogs() {
  for (const dialog of openDialogs) dialog.close();
}

/**
 * A modal confirmation: resolves true when confirmed, false on "Keep it" or Escape.
 * @param {string} question
 * @param {string} confirmLabel
 * @returns {Promise<boolean>}
 */
export function confirmDialog(question, confirmLabel) {
  return new Promise((resolve) => {
    const opener = document.activeElement;
    const questionId = nextId('dialog-question');
    const yes = h('button', { type: 'button', class: 'button danger' }, confirmLabel);
    const no = h('button', { type: 'button', class: 'button' }, 'Keep it');
    const dialog = h(
      'dialog',
      { class: 'confirm', 'aria-labelledby': questionId },
      h('p', { id: questionId, class: 'dialog-question' }, question),
      h('div', { class: 'actions' }, yes, no),
    );
    let confirmed = false;
    yes.addEventListener('click', () => {
      confirmed = true;
      dialog.close();
    });
    no.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => {
      openDialogs.delete(dialog);
      dialog.remove();
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
      resolve(confirmed);
    });
    document.body.append(dialog);
    openDialogs.add(dialog);
    dialog.showModal();
    no.focus();
  });
}

/**
 * Copies the control's value; without the Clipboard API (no secure context) selects it and tries execCommand.
 * @param {HTMLInputElement | HTMLTextAreaElement} control
 * @param {HTMLElement} statusEl says whether it did
 * @param {string} what
 */
export async function copyFrom(control, statusEl, what) {
  const text = control.value;
  try {
    if (!navigator.clipboard || !window.isSecureContext) throw new Error('no clipboard');
    await navigator.clipboard.writeText(text);
    statusEl.textContent = `Copied the ${what}.`;
  } catch {
    control.focus();
    control.select();
    let copied = false;
    try {
      copied = document.execCommand('copy');
    } catch {
      copied = false;
    }
    statusEl.textContent = copied ? `Copied the ${what}.` : `The ${what} is selected: press Ctrl+C (⌘C on a Mac) to copy it.`;
  }
}

/**
 * A read-only field with a button that copies its value; `statusEl` says whether it did.
 * @param {string} labelText
 * @param {HTMLInputElement | HTMLTextAreaElement} control
 * @param {string} buttonLabel
 * @param {string} what
 * @param {HTMLElement} statusEl
 */
export function copyField(labelText, control, buttonLabel, what, statusEl) {
  const button = h('button', { type: 'button', class: 'button small' }, buttonLabel);
  button.addEventListener('click', () => void copyFrom(control, statusEl, what));
  const { wrap } = field(labelText, control);
  wrap.classList.add('copy-field');
  wrap.append(button);
  return wrap;
}
