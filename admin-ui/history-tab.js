// @ts-check
// The History tab: a bot's runs, newest first, with filters, "Load more" (keyset paging) and live updates.

import { api, botPath, runPath } from './api.js';
import { dataTable, errorSlot, field, fill, focusEl, h, heading, liveRegion, loadingEl } from './dom.js';
import { emptyFilters, historyQuery, isFiltered, sameRun } from './history-query.js';
import { HISTORY_COLUMNS, runCells } from './history-rows.js';
import { openLive } from './live.js';
import { runHref } from './routes.js';
import { isActive, settings } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminBotAnswer} AdminBotAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').ListedRunAnswer} ListedRunAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').ListedTriggerAnswer} ListedTriggerAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').RunEventAnswer} RunEventAnswer */
/** @typedef {import('./history-query.js').HistoryFilters} HistoryFilters */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * The tab's parts and state.
 * @typedef {{
 *   scope: Scope,
 *   botId: string,
 *   filters: HistoryFilters,
 *   table: ReturnType<typeof dataTable>,
 *   tableWrap: HTMLElement,
 *   emptyEl: HTMLElement,
 *   listStatus: HTMLElement,
 *   more: HTMLButtonElement,
 *   errors: import('./dom.js').ErrorSlot,
 *   rows: Map<string, { tr: HTMLTableRowElement, run: ListedRunAnswer }>,
 *   fetchSeq: Map<string, number>,
 *   cursor: string | null,
 *   loadSeq: number,
 * }} HistoryTab
 */

/** botId → filters, kept while the page is open. @type {Map<string, HistoryFilters>} */
const historyFilters = new Map();

/**
 * @param {Scope} scope
 * @param {HTMLElement} panel
 * @param {AdminBotAnswer} bot
 * @param {boolean} focusHeading
 */
export function renderHistory(scope, panel, bot, focusHeading) {
  const table = dataTable(`Runs of ${bot.name || bot.id}, newest first`, HISTORY_COLUMNS);
  /** @type {HistoryTab} */
  const tab = {
    scope,
    botId: bot.id,
    filters: { ...(historyFilters.get(bot.id) || emptyFilters()) },
    table,
    tableWrap: h('div', { class: 'table-wrap', hidden: true }, table.table),
    emptyEl: h('p', { class: 'empty', hidden: true }),
    listStatus: h('div', {}, loadingEl()),
    more: h('button', { type: 'button', class: 'button', hidden: true }, 'Load more'),
    errors: errorSlot(),
    rows: new Map(), // run id → { tr, run }
    fetchSeq: new Map(), // run id → number of the latest fetch, so an older answer never wins
    cursor: null,
    loadSeq: 0,
  };
  const h2 = heading(2, 'History');
  const live = liveRegion();
  const filters = filterForm(tab);
  fill(
    panel,
    h('div', { class: 'heading-row' }, h2, live),
    filters.form,
    tab.errors.el,
    tab.listStatus,
    tab.emptyEl,
    tab.tableWrap,
    h('div', { class: 'actions' }, tab.more),
  );
  if (focusHeading) focusEl(h2);
  tab.more.addEventListener('click', () => void loadMore(tab));
  void listTriggers(tab, filters.triggerSelect);
  void load(tab, true);
  openLive(
    scope,
    bot.id,
    live,
    (event) => void onInvocation(tab, event),
    () => void catchUp(tab),
  );
}

/**
 * The filter form: Apply keeps the filters for the bot (while the page is open), Clear forgets them.
 * @param {HistoryTab} tab
 */
function filterForm(tab) {
  const { filters } = tab;
  const status = h(
    'select',
    { name: 'status' },
    h('option', { value: '' }, 'All'),
    settings().statuses.map((s) => h('option', { value: s }, s)),
  );
  const triggerSelect = h('select', { name: 'triggerId' }, h('option', { value: '' }, 'All'));
  const from = h('input', { type: 'datetime-local', name: 'from', step: '1' });
  const to = h('input', { type: 'datetime-local', name: 'to', step: '1' });
  const q = h('input', {
    type: 'search',
    name: 'q',
    placeholder: 'invocation id or idempotency key',
    autocomplete: 'off',
    spellcheck: 'false',
  });
  const searchField = field('Search', q).wrap;
  searchField.classList.add('grow');
  const setFields = () => {
    status.value = filters.status;
    triggerSelect.value = filters.triggerId;
    from.value = filters.from;
    to.value = filters.to;
    q.value = filters.q;
  };
  const clear = () => {
    Object.assign(filters, emptyFilters());
    historyFilters.delete(tab.botId);
    setFields();
    void load(tab, true);
  };
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Filter runs', novalidate: true },
    field('Status', status).wrap,
    field('Trigger', triggerSelect).wrap,
    field('From', from).wrap,
    field('To', to).wrap,
    searchField,
    h(
      'div',
      { class: 'actions filter-actions' },
      h('button', { type: 'submit', class: 'button primary' }, 'Apply'),
      h('button', { type: 'button', class: 'button', onclick: clear }, 'Clear'),
    ),
  );
  setFields();
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    Object.assign(filters, { status: status.value, triggerId: triggerSelect.value, from: from.value, to: to.value, q: q.value.trim() });
    historyFilters.set(tab.botId, { ...filters });
    void load(tab, true);
  });
  return { form, triggerSelect };
}

/**
 * The trigger filter lists the bot's triggers (deleted ones are not listed; their runs show the id).
 * @param {HistoryTab} tab
 * @param {HTMLSelectElement} select
 */
async function listTriggers(tab, select) {
  /** @type {ListedTriggerAnswer[]} */
  let list;
  try {
    list = await api('GET', `${botPath(tab.botId)}/triggers`);
  } catch {
    return; // The filter still works with "All"; the list's own errors show in the table area.
  }
  if (!tab.scope.alive || !Array.isArray(list)) return;
  const chosen = tab.filters.triggerId;
  for (const trigger of list) select.append(h('option', { value: trigger.id }, trigger.name));
  select.value = chosen;
  if (chosen && select.value !== chosen) {
    select.append(h('option', { value: chosen }, chosen));
    select.value = chosen;
  }
}

/**
 * Keyboard users continue at the first run just loaded (the button may be gone now).
 * @param {HistoryTab} tab
 */
async function loadMore(tab) {
  const firstNew = tab.rows.size;
  await load(tab, false);
  const link = tab.table.tbody.children[firstNew]?.querySelector('a');
  if (link && (document.activeElement === tab.more || document.activeElement === document.body)) link.focus();
}

/**
 * @param {HistoryTab} tab
 * @param {string | null} before
 */
function query(tab, before) {
  return historyQuery(botPath(tab.botId), tab.filters, before, settings().historyPageSize);
}

/** @param {HistoryTab} tab */
function updateEmpty(tab) {
  const none = tab.rows.size === 0;
  tab.tableWrap.hidden = none;
  tab.emptyEl.hidden = !none;
  tab.emptyEl.textContent = isFiltered(tab.filters) ? 'No runs match these filters.' : 'No runs yet.';
}

/**
 * @param {HistoryTab} tab
 * @param {ListedRunAnswer} run
 */
function rowFor(tab, run) {
  const tr = tab.table.row([h('a', { href: runHref(run.id), class: 'mono' }, run.id), ...runCells(run)]);
  tr.dataset.runId = run.id;
  return tr;
}

/**
 * @param {HistoryTab} tab
 * @param {ListedRunAnswer} run
 */
function updateRow(tab, run) {
  const entry = tab.rows.get(run.id);
  if (!entry || sameRun(entry.run, run)) return;
  entry.run = run;
  // Keep the first cell (the link) so focus on it survives the update.
  const cells = tab.table.cells(['', ...runCells(run)]).slice(1);
  const tds = entry.tr.querySelectorAll('td');
  cells.forEach((cell, i) => tds[i + 1].replaceWith(cell));
  entry.tr.classList.remove('updated');
  void entry.tr.offsetWidth; // restart the highlight animation
  entry.tr.classList.add('updated');
}

/**
 * Reads a page: the first one again (`reset`), or the one after the last run shown.
 * @param {HistoryTab} tab
 * @param {boolean} reset
 */
async function load(tab, reset) {
  const seq = ++tab.loadSeq;
  tab.errors.clear();
  tab.more.disabled = true;
  if (reset) {
    fill(tab.listStatus, loadingEl());
    tab.cursor = null;
  }
  /** @type {ListedRunAnswer[]} */
  let runs;
  try {
    runs = await api('GET', query(tab, reset ? null : tab.cursor));
  } catch (error) {
    if (!tab.scope.alive || seq !== tab.loadSeq) return;
    tab.listStatus.replaceChildren();
    tab.errors.show(error);
    tab.more.disabled = false;
    return;
  }
  if (!tab.scope.alive || seq !== tab.loadSeq) return;
  tab.listStatus.replaceChildren();
  if (reset) {
    tab.rows.clear();
    tab.table.tbody.replaceChildren();
  }
  showPage(tab, Array.isArray(runs) ? runs : []);
}

/**
 * @param {HistoryTab} tab
 * @param {ListedRunAnswer[]} runs
 */
function showPage(tab, runs) {
  for (const run of runs) {
    if (tab.rows.has(run.id)) continue;
    const tr = rowFor(tab, run);
    tab.rows.set(run.id, { tr, run });
    tab.table.tbody.append(tr);
  }
  if (runs.length > 0) tab.cursor = runs[runs.length - 1].id;
  tab.more.hidden = runs.length < settings().historyPageSize;
  tab.more.disabled = false;
  updateEmpty(tab);
}

/**
 * The run as it is now; null when a newer fetch of it was started meanwhile (or the tab closed).
 * @param {HistoryTab} tab
 * @param {string} id
 * @returns {Promise<ListedRunAnswer | null>}
 */
async function fetchRun(tab, id) {
  const n = (tab.fetchSeq.get(id) || 0) + 1;
  tab.fetchSeq.set(id, n);
  const run = await api('GET', runPath(id));
  return tab.scope.alive && tab.fetchSeq.get(id) === n ? run : null;
}

/** @param {HistoryTab} tab */
function newestCreatedAt(tab) {
  const first = tab.table.tbody.firstElementChild;
  const entry = first instanceof HTMLElement && first.dataset.runId ? tab.rows.get(first.dataset.runId) : undefined;
  return entry ? Date.parse(entry.run.createdAt) : -Infinity;
}

/**
 * @param {HistoryTab} tab
 * @param {ListedRunAnswer} run
 */
function insertAtTop(tab, run) {
  if (tab.rows.has(run.id)) return updateRow(tab, run);
  // A run older than the newest shown is not new (e.g. an old run off this page changing state).
  if (Date.parse(run.createdAt) < newestCreatedAt(tab)) return;
  const tr = rowFor(tab, run);
  tab.rows.set(run.id, { tr, run });
  tab.table.tbody.prepend(tr);
  tr.classList.add('updated');
  updateEmpty(tab);
}

/**
 * @param {HistoryTab} tab
 * @param {Pick<RunEventAnswer, 'invocationId'>} event
 */
async function onInvocation(tab, event) {
  const id = event.invocationId;
  if (!tab.rows.has(id) && isFiltered(tab.filters)) return;
  try {
    const run = await fetchRun(tab, id);
    if (!run) return;
    if (tab.rows.has(id)) updateRow(tab, run);
    else if (!isFiltered(tab.filters)) insertAtTop(tab, run);
  } catch {
    // The row stays as it was; the next event for this run fetches it again.
  }
}

/**
 * When the stream (re)opens: picks up what changed before it, without losing the rows already shown.
 * @param {HistoryTab} tab
 */
async function catchUp(tab) {
  try {
    const seq = tab.loadSeq;
    /** @type {ListedRunAnswer[]} */
    const runs = await api('GET', query(tab, null));
    if (!tab.scope.alive || seq !== tab.loadSeq || !Array.isArray(runs)) return;
    const fresh = [];
    for (const run of runs) {
      if (tab.rows.has(run.id)) updateRow(tab, run);
      else fresh.push(run);
    }
    for (const run of fresh.reverse()) insertAtTop(tab, run);
    const seen = new Set(runs.map((r) => r.id));
    for (const [id, entry] of tab.rows) {
      if (!seen.has(id) && isActive(entry.run.status)) void onInvocation(tab, { invocationId: id });
    }
  } catch {
    // Shown rows stay; the next events update them.
  }
}
