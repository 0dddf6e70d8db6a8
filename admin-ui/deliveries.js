// @ts-check
// A delivery log: the deliveries at a path, each with Redeliver (not in read-only mode). No event announces a
// delivery's attempt, so the log is re-read when asked (`refresh`, the Refresh button, a run of the trigger
// changing state while `watch(true)`), and then by itself while a delivery is due within a minute.

import { api, errorText } from './api.js';
import { alertEl, badge, dataTable, errorSlot, fill, focusEl, h, heading, liveRegion, loadingEl, nextId, statusLine, time } from './dom.js';
import { formatDuration, formatNumber, NONE } from './format.js';
import { nextPoll, POLL_MIN_MS } from './delivery-polling.js';
import { openLive, setLive } from './live.js';
import { runHref } from './routes.js';
import { settings } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminDeliveryAnswer} AdminDeliveryAnswer */
/** @typedef {import('./scope.js').Scope} Scope */
/** @typedef {{ path: string, level: 2 | 4, caption: string, empty: string, live?: { botId: string, triggerId: string } }} LogOptions */

/**
 * The log's parts and state.
 * @typedef {{
 *   scope: Scope,
 *   options: LogOptions,
 *   columns: string[],
 *   title: HTMLElement,
 *   liveEl: HTMLElement | null,
 *   status: HTMLElement,
 *   errors: import('./dom.js').ErrorSlot,
 *   listArea: HTMLElement,
 *   seq: number,
 *   timer: ReturnType<typeof setTimeout> | null,
 *   soon: ReturnType<typeof setTimeout> | null,
 *   pollDelay: number,
 *   closeLive: (() => void) | null,
 *   shown: string | null,
 *   refocus: string | null,
 * }} DeliveryLog
 */

/**
 * @param {Scope} scope
 * @param {LogOptions} options
 * @returns {{ el: HTMLElement, refresh(): Promise<void>, watch(on: boolean): void }}
 */
export function deliveriesSection(scope, options) {
  const { readOnly } = settings();
  const withInvocation = Boolean(options.live);
  /** @type {DeliveryLog} */
  const log = {
    scope,
    options,
    columns: ['Event', withInvocation ? 'Invocation' : null, 'Status', 'Attempts', 'Response', 'Latency', 'Last attempt', 'Next attempt']
      .concat(readOnly ? [] : ['Actions'])
      .filter((c) => c !== null),
    title: heading(options.level, 'Deliveries', { id: nextId('deliveries') }),
    liveEl: options.live ? liveRegion() : null,
    status: statusLine(),
    errors: errorSlot(),
    listArea: h('div', { class: 'deliveries' }, loadingEl()),
    seq: 0,
    timer: null,
    soon: null,
    pollDelay: POLL_MIN_MS,
    closeLive: null,
    shown: null, // the list as last drawn (JSON)
    refocus: null, // a selector to focus in the next drawing
  };
  scope.onEnd(() => {
    stopTimer(log);
    if (log.soon) clearTimeout(log.soon);
  });
  void load(log);
  const refreshButton = h('button', { type: 'button', class: 'button small', onclick: () => refresh(log) }, 'Refresh');
  const el = h(
    'section',
    { class: options.level > 2 ? 'subsection' : null, 'aria-labelledby': log.title.id },
    h('div', { class: 'heading-row' }, log.title, log.liveEl, refreshButton),
    log.errors.el,
    log.status,
    log.listArea,
  );
  return { el, refresh: () => refresh(log), watch: (on) => watch(log, on) };
}

/** @param {DeliveryLog} log */
function stopTimer(log) {
  if (log.timer) clearTimeout(log.timer);
  log.timer = null;
}

/** @param {DeliveryLog} log */
async function load(log) {
  const n = ++log.seq;
  stopTimer(log);
  /** @type {AdminDeliveryAnswer[]} */
  let list;
  try {
    list = await api('GET', log.options.path);
  } catch (error) {
    if (!log.scope.alive || n !== log.seq) return;
    log.shown = null;
    fill(log.listArea, alertEl(errorText(error)));
    return;
  }
  if (!log.scope.alive || n !== log.seq) return;
  list = Array.isArray(list) ? list : [];
  show(log, list);
  schedule(log, list);
}

/**
 * @param {DeliveryLog} log
 * @param {AdminDeliveryAnswer[]} list
 */
function show(log, list) {
  const drawn = JSON.stringify(list);
  if (drawn === log.shown) return; // a re-read that found nothing new leaves the table (and focus) alone
  log.shown = drawn;
  if (list.length === 0) {
    fill(log.listArea, h('p', { class: 'empty' }, log.options.empty));
    return;
  }
  // Focus on a row's link or Redeliver button (or on the one just pressed) survives the table being drawn again.
  const active = document.activeElement;
  const focused =
    active instanceof HTMLElement && log.listArea.contains(active) && active.dataset.deliveryId
      ? `${active.tagName.toLowerCase()}[data-delivery-id="${CSS.escape(active.dataset.deliveryId)}"]`
      : log.refocus;
  log.refocus = null;
  const t = dataTable(log.options.caption, log.columns);
  for (const d of list) {
    const tr = t.row(deliveryCells(log, d));
    tr.dataset.deliveryId = d.id;
    t.tbody.append(tr);
  }
  fill(log.listArea, h('div', { class: 'table-wrap' }, t.table));
  if (focused) focusEl(log.listArea.querySelector(focused) || log.title);
}

/**
 * @param {DeliveryLog} log
 * @param {AdminDeliveryAnswer} d
 */
function deliveryCells(log, d) {
  const invocation = h('a', { href: runHref(d.invocationId), class: 'mono', 'data-delivery-id': d.id }, d.invocationId);
  const cells = [
    h('code', {}, d.event),
    ...(log.options.live ? [invocation] : []),
    badge(d.status),
    formatNumber(d.attempts),
    responseCell(d),
    formatDuration(d.latencyMs),
    time(d.lastAttemptAt),
    d.status === 'pending' ? time(d.nextAttemptAt) : NONE,
  ];
  if (settings().readOnly) return cells;
  const button = h(
    'button',
    { type: 'button', class: 'button small', 'aria-label': `Redeliver ${d.event} of ${d.invocationId}`, 'data-delivery-id': d.id },
    'Redeliver',
  );
  button.addEventListener('click', () => void redeliver(log, d, button));
  return [...cells, button];
}

/** @param {AdminDeliveryAnswer} d */
function responseCell(d) {
  const code = typeof d.responseStatus === 'number' ? String(d.responseStatus) : NONE;
  if (!d.error) return code;
  return h('div', {}, h('span', {}, code), h('span', { class: 'delivery-error error-text' }, d.error));
}

/**
 * While a delivery is pending and due within a minute, reads the log again after it is due.
 * @param {DeliveryLog} log
 * @param {AdminDeliveryAnswer[]} list
 */
function schedule(log, list) {
  if (!list.some((d) => d.status === 'pending')) {
    log.pollDelay = POLL_MIN_MS;
    return;
  }
  const poll = nextPoll(list, Date.now(), log.pollDelay);
  if (!poll) return;
  log.pollDelay = poll.next;
  log.timer = setTimeout(() => void load(log), poll.delay);
}

/** @param {DeliveryLog} log */
function refresh(log) {
  log.pollDelay = POLL_MIN_MS;
  return load(log);
}

/**
 * A run changed state: its deliveries are stored with the change (or just after it), so read them shortly.
 * @param {DeliveryLog} log
 */
function refreshSoon(log) {
  if (log.soon) clearTimeout(log.soon);
  log.soon = setTimeout(() => {
    log.soon = null;
    void refresh(log);
  }, 300);
}

/**
 * @param {DeliveryLog} log
 * @param {AdminDeliveryAnswer} d
 * @param {HTMLButtonElement} button
 */
async function redeliver(log, d, button) {
  log.errors.clear();
  log.status.textContent = '';
  // A disabled button loses focus: the redrawn table gives it back to this row's button.
  if (document.activeElement === button) log.refocus = `button[data-delivery-id="${CSS.escape(d.id)}"]`;
  button.disabled = true;
  try {
    await api('POST', `/deliveries/${encodeURIComponent(d.id)}/redeliver`);
    if (!log.scope.alive) return;
    log.status.textContent = `Redelivering ${d.event} of ${d.invocationId}: it is sent again at once.`;
    await refresh(log);
    // Still there: the log was not drawn again (unchanged, or its read failed).
    if (log.scope.alive && button.isConnected) giveBack(log, button);
  } catch (error) {
    if (!log.scope.alive) return;
    giveBack(log, button);
    log.errors.show(error);
  }
}

/**
 * The Redeliver button works again and, when focus was lost with it, has it back.
 * @param {DeliveryLog} log
 * @param {HTMLButtonElement} button
 */
function giveBack(log, button) {
  log.refocus = null;
  button.disabled = false;
  if (document.activeElement === document.body) focusEl(button);
}

/**
 * Follows the trigger's runs on the bot's event stream (only while it has a callback: nothing else delivers).
 * @param {DeliveryLog} log
 * @param {boolean} on
 */
function watch(log, on) {
  const { live } = log.options;
  if (!live || !log.liveEl || Boolean(log.closeLive) === on) return;
  if (on) {
    log.closeLive = openLive(
      log.scope,
      live.botId,
      log.liveEl,
      (event) => {
        if (!event.triggerId || event.triggerId === live.triggerId) refreshSoon(log);
      },
      () => void refresh(log),
    );
  } else if (log.closeLive) {
    log.closeLive();
    log.closeLive = null;
    setLive(log.liveEl, '', 'off');
  }
}
