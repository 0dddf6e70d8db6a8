// @ts-check
// #/audit and #/audit/triggers/:triggerId: who changed what (docs/security.md "Audit log"), newest first, filtered by
// action and principal, a page at a time ("Show older entries" follows the server's cursor).

import { api } from './api.js';
import { dataTable, errorSlot, field, h, heading, statusLine, time } from './dom.js';
import { render, setTitle } from './page.js';
import { auditHref, runHref } from './routes.js';
import { settings } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminAuditPageAnswer} AdminAuditPageAnswer */
/** @typedef {AdminAuditPageAnswer['entries'][number]} AuditEntryAnswer */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * The query of one page: the filters given, the page size, and the cursor of the page before.
 * @param {{ action?: string, principal?: string, triggerId?: string }} filters
 * @param {string | null} cursor
 */
export function auditQuery(filters, cursor) {
  const query = new URLSearchParams({ limit: String(settings().auditPageSize) });
  for (const [name, value] of Object.entries(filters)) if (value) query.set(name, value);
  if (cursor) query.set('cursor', cursor);
  return `/audit-log?${query}`;
}

/**
 * An entry's details as `name: value` pairs.
 * @param {AuditEntryAnswer['details']} details
 */
export function detailsText(details) {
  return Object.entries(details ?? {})
    .map(([name, value]) => `${name}: ${value === null ? '—' : String(value)}`)
    .join(', ');
}

/**
 * @param {Scope} scope
 * @param {string} [triggerId]
 */
export async function showAudit(scope, triggerId) {
  const title = triggerId ? `Audit log of trigger ${triggerId}` : 'Audit log';
  setTitle(title);
  const action = h(
    'select',
    { name: 'action' },
    h('option', { value: '' }, 'All actions'),
    settings().auditActions.map((a) => h('option', { value: a }, a)),
  );
  const principal = h('input', { type: 'text', name: 'principal', autocomplete: 'off', spellcheck: 'false' });
  const status = statusLine();
  const errors = errorSlot();
  const table = dataTable('Audit log entries, newest first', ['When', 'Who', 'What', 'Trigger', 'Run', 'Details']);
  const older = h('button', { type: 'button', class: 'button', hidden: true }, 'Show older entries');
  const empty = h('p', { class: 'empty', hidden: true }, 'No entries match.');
  /** @type {string | null} */
  let next = null;
  let shown = 0;

  /** @param {boolean} more the page after the one shown, else the first page of the filters */
  async function load(more) {
    errors.clear();
    older.disabled = true;
    try {
      const filters = { action: action.value, principal: principal.value.trim(), triggerId };
      /** @type {AdminAuditPageAnswer} */
      const page = await api('GET', auditQuery(filters, more ? next : null));
      if (!scope.alive) return;
      if (!more) {
        table.tbody.replaceChildren();
        shown = 0;
      }
      for (const entry of page.entries) table.tbody.append(table.row(cells(entry)));
      shown += page.entries.length;
      next = page.next;
      older.hidden = next === null;
      empty.hidden = shown > 0;
      status.textContent = `Showing ${shown} entr${shown === 1 ? 'y' : 'ies'}${next ? '; older ones follow' : ''}.`;
    } catch (error) {
      if (scope.alive) errors.show(error);
    } finally {
      older.disabled = false;
    }
  }
  older.addEventListener('click', () => void load(true));

  const filterForm = h(
    'form',
    {
      class: 'filters',
      role: 'search',
      'aria-label': 'Filter the audit log',
      onsubmit: (/** @type {Event} */ event) => {
        event.preventDefault();
        void load(false);
      },
    },
    field('Action', action).wrap,
    field('Principal', principal, 'Exactly as recorded, e.g. a user id').wrap,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button' }, 'Filter')),
  );
  render(
    heading(1, title),
    triggerId ? h('p', {}, h('a', { href: auditHref() }, 'Show every trigger’s entries')) : null,
    filterForm,
    errors.el,
    status,
    h('div', { class: 'table-wrap' }, table.table),
    empty,
    h('div', { class: 'actions' }, older),
  );
  await load(false);
}

/** @param {AuditEntryAnswer} entry */
function cells(entry) {
  return [
    time(entry.at),
    entry.principal ?? h('span', { class: 'muted' }, 'unknown'),
    h('code', {}, entry.action),
    entry.triggerId ? h('a', { href: auditHref(entry.triggerId), class: 'mono' }, entry.triggerId) : '—',
    entry.invocationId ? h('a', { href: runHref(entry.invocationId), class: 'mono' }, entry.invocationId) : '—',
    detailsText(entry.details) || '—',
  ];
}
