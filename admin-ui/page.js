// @ts-check
// The page's frame: the title, the main area, loading and failure states.

import { errorText } from './api.js';
import { alertEl, fill, focusEl, h, heading, loadingEl } from './dom.js';
import { settings } from './settings.js';

const PRODUCT = 'Webhook triggers';

/** @type {() => void} */
let showAgain = () => {};

/**
 * The router's way to show the current address again ("Try again"); set once by the router.
 * @param {() => void} fn
 */
export function setRetry(fn) {
  showAgain = fn;
}

export function retry() {
  showAgain();
}

function mainEl() {
  return /** @type {HTMLElement} */ (document.getElementById('main'));
}

/** @param {...(string | null | undefined)} parts */
export function setTitle(...parts) {
  document.title = [...parts.filter(Boolean), PRODUCT].join(' — ');
}

/**
 * Replaces the page content and moves focus to its main heading.
 * @param {HTMLElement} h1
 * @param {...import('./dom.js').Child} content
 */
export function render(h1, ...content) {
  fill(mainEl(), h1, readOnlyNote(), ...content);
  focusEl(h1);
}

function readOnlyNote() {
  return settings().readOnly ? h('p', { class: 'note read-only-note' }, 'Read-only: changes are disabled.') : null;
}

/** @param {string} title */
export function loading(title) {
  setTitle(title);
  fill(mainEl(), loadingEl());
}

/**
 * A screen that could not load: what went wrong, "Try again" and a way back.
 * @param {string} title
 * @param {unknown} error
 */
export function renderFailure(title, error) {
  setTitle(title);
  render(
    heading(1, title),
    alertEl(errorText(error)),
    h('p', {}, h('button', { type: 'button', class: 'button', onclick: retry }, 'Try again'), ' ', h('a', { href: '#/' }, 'All bots')),
  );
}

export function showNotFound() {
  setTitle('Page not found');
  render(heading(1, 'Page not found'), h('p', {}, 'There is no screen at this address. ', h('a', { href: '#/' }, 'Go to the bots.')));
}
