// @ts-check
// Building the screens. Every string that comes from the API is rendered as text (textContent / text
// nodes), never parsed as HTML; nothing here needs 'unsafe-inline'.

import { errorText } from './api.js';
import { formatTime, NONE } from './format.js';

/** @typedef {Node | string | number | null | undefined | false} ChildItem */
/** A child, or lists of them nested up to three deep (left out: null, undefined, false). */
/** @typedef {ChildItem | Array<ChildItem | Array<ChildItem | ChildItem[]>>} Child */
/** @typedef {Record<string, unknown>} Props */

/**
 * Creates an element. Props: `class`, `text`, `value`, `on<event>` (listeners), anything else becomes an
 * attribute (true → empty attribute; null/undefined/false → left out). Children: nodes or strings (as text).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Props | null} [props]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) setProp(el, name, value);
  append(el, children);
  return el;
}

/**
 * @param {HTMLElement} el
 * @param {string} name
 * @param {unknown} value
 */
function setProp(el, name, value) {
  if (value === null || value === undefined || value === false) return;
  if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), /** @type {EventListener} */ (value));
  else if (name === 'class') el.className = String(value);
  else if (name === 'text') el.textContent = String(value);
  else if (name === 'value') /** @type {HTMLInputElement} */ (el).value = String(value);
  else el.setAttribute(name, value === true ? '' : String(value));
}

/**
 * Replaces the children of `el` (null, undefined and false children are left out).
 * @template {Element} E
 * @param {E} el
 * @param {...Child} children
 * @returns {E}
 */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/**
 * @template {Element} E
 * @param {E} el
 * @param {Child[]} children
 * @returns {E}
 */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

let uid = 0;
/** A fresh element id. @param {string} prefix */
export function nextId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

/**
 * A heading that takes focus when a screen (or a part) opens.
 * @param {1 | 2 | 3 | 4} level
 * @param {string} text
 * @param {Props} [props]
 */
export function heading(level, text, props) {
  return h(/** @type {'h1' | 'h2' | 'h3' | 'h4'} */ (`h${level}`), { tabindex: '-1', ...props }, text);
}

/**
 * A titled part of a screen (a trigger's Keys, Signed requests, Allowed IPs, Callback): a `<section>` named by
 * its heading for assistive technology, the heading first.
 * @param {HTMLElement} title
 * @param {...Child} children
 */
export function subsection(title, ...children) {
  return h('section', { class: 'subsection', 'aria-labelledby': title.id }, title, ...children);
}

export function loadingEl() {
  return h('p', { class: 'loading', role: 'status' }, 'Loading…');
}

/** @param {string} text */
export function alertEl(text) {
  return h('p', { class: 'error', role: 'alert' }, text);
}

/** A status line (role="status"): what an action did. */
export function statusLine() {
  return h('p', { class: 'status-text', role: 'status' });
}

/** @typedef {{ el: HTMLDivElement, show(error: unknown): void, clear(): void }} ErrorSlot */

/**
 * A spot for one error at a time: shows an element with role="alert" only while there is an error.
 * @returns {ErrorSlot}
 */
export function errorSlot() {
  const el = h('div', { class: 'error-slot' });
  return {
    el,
    show(error) {
      fill(el, alertEl(typeof error === 'string' ? error : errorText(error)));
    },
    clear() {
      el.replaceChildren();
    },
  };
}

/** @param {Element | null | undefined} el */
export function focusEl(el) {
  if (el instanceof HTMLElement && el.isConnected) el.focus({ preventScroll: false });
}

/**
 * A `<time>` element for an ISO time, or "—".
 * @param {string | null | undefined} iso
 * @returns {HTMLTimeElement | string}
 */
export function time(iso) {
  const shown = formatTime(iso);
  if (!shown) return NONE;
  if (!shown.iso) return shown.text;
  return h('time', { datetime: shown.iso }, shown.text);
}

/** A status as a coloured badge. @param {string} status */
export function badge(status) {
  return h('span', { class: `badge badge-${String(status).replace(/[^a-z_]/g, '')}` }, String(status));
}

/**
 * A labelled form field: returns the wrapper and the control.
 * @template {HTMLElement} C
 * @param {string} labelText
 * @param {C} control
 * @param {string} [hint]
 */
export function field(labelText, control, hint) {
  if (!control.id) control.id = nextId('f');
  const hintEl = hint ? h('p', { class: 'hint', id: `${control.id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  const wrap = h('div', { class: 'field' }, h('label', { for: control.id }, labelText), control, hintEl);
  return { wrap, control };
}

/**
 * A term and its description in a `<dl class="facts">`.
 * @param {string} term
 * @param {Child} description
 * @param {Props} [props] of the `<dd>`
 */
export function fact(term, description, props) {
  return h('div', {}, h('dt', {}, term), h('dd', props ?? {}, description));
}

/**
 * A data table; narrow screens show each row as a card (the cells carry their column label).
 * @param {string} caption
 * @param {string[]} columns
 */
export function dataTable(caption, columns) {
  const tbody = h('tbody', { role: 'rowgroup' });
  const headRow = h(
    'tr',
    { role: 'row' },
    columns.map((c) => h('th', { scope: 'col', role: 'columnheader' }, c)),
  );
  const table = h(
    'table',
    { class: 'data', role: 'table' },
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', { role: 'rowgroup' }, headRow),
    tbody,
  );
  /** @param {Child[]} cells */
  const cellsOf = (cells) => cells.map((content, i) => h('td', { role: 'cell', 'data-label': columns[i] }, content));
  /** @param {Child[]} cells */
  const row = (cells) => h('tr', { role: 'row' }, cellsOf(cells));
  return { table, tbody, row, cells: cellsOf };
}

/** The "Live" / "Reconnecting…" line of a screen that follows runs (aria-live="polite"). */
export function liveRegion() {
  return h('p', { class: 'live', 'aria-live': 'polite', 'data-state': 'off' });
}

/** @param {string} value */
export function readonlyInput(value) {
  return h('input', { type: 'text', readonly: true, class: 'mono', value, spellcheck: 'false', autocomplete: 'off' });
}
