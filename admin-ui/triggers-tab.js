// @ts-check
// The Settings tab: Bot Triggers (the list, Add Trigger, View, Rotate key, Delete).

import { addTriggerForm } from './add-trigger-form.js';
import { api, botPath, errorText, triggerPath } from './api.js';
import { confirmDialog } from './dialogs.js';
import { formatTime } from './format.js';
import { alertEl, dataTable, errorSlot, fill, focusEl, h, heading, loadingEl, statusLine, time } from './dom.js';
import { Scope } from './scope.js';
import { settings } from './settings.js';
import { triggerView } from './trigger-view.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminBotAnswer} AdminBotAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').ListedTriggerAnswer} ListedTriggerAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').ViewedTriggerAnswer} ViewedTriggerAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').CreatedTriggerAnswer} CreatedTriggerAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').RotatedKeyAnswer} RotatedKeyAnswer */
/** @typedef {import('./trigger-view.js').ShownTrigger} ShownTrigger */

/**
 * The tab's parts and state.
 * @typedef {{
 *   scope: Scope,
 *   bot: AdminBotAnswer,
 *   h2: HTMLElement,
 *   errors: import('./dom.js').ErrorSlot,
 *   status: HTMLElement,
 *   listArea: HTMLElement,
 *   viewArea: HTMLElement,
 *   viewing: string | null,
 *   viewScope: Scope | null,
 * }} SettingsTab
 */

/**
 * @param {Scope} scope
 * @param {HTMLElement} panel
 * @param {AdminBotAnswer} bot
 * @param {boolean} focusHeading
 */
export function renderSettings(scope, panel, bot, focusHeading) {
  /** @type {SettingsTab} */
  const tab = {
    scope,
    bot,
    h2: heading(2, 'Bot Triggers'),
    errors: errorSlot(),
    status: statusLine(),
    listArea: h('div', { class: 'trigger-list' }, loadingEl()),
    viewArea: h('div', { class: 'trigger-view-area' }),
    viewing: null, // id of the trigger shown in viewArea
    viewScope: null, // lives while one trigger's view is shown (its callback and deliveries)
  };
  scope.onEnd(() => tab.viewScope && tab.viewScope.end());
  const toolbar = h('div', { class: 'toolbar' });
  const addForm = settings().readOnly ? null : addTriggerForm(scope, bot.id, (created) => onCreated(tab, created));
  if (addForm) toolbar.append(addForm.button);
  fill(panel, tab.h2, toolbar, addForm ? addForm.form : null, tab.errors.el, tab.status, tab.listArea, tab.viewArea);
  if (focusHeading) focusEl(tab.h2);
  void loadList(tab);
}

/** @param {SettingsTab} tab */
async function loadList(tab) {
  try {
    /** @type {ListedTriggerAnswer[]} */
    const list = await api('GET', `${botPath(tab.bot.id)}/triggers`);
    if (!tab.scope.alive) return;
    fill(tab.listArea, triggerTable(tab, Array.isArray(list) ? list : []));
  } catch (error) {
    if (!tab.scope.alive) return;
    fill(tab.listArea, alertEl(errorText(error)));
  }
}

/**
 * @param {SettingsTab} tab
 * @param {ListedTriggerAnswer[]} triggers
 */
function triggerTable(tab, triggers) {
  if (triggers.length === 0) return h('p', { class: 'empty' }, 'No triggers yet.');
  const t = dataTable(`Triggers of ${tab.bot.name || tab.bot.id}`, ['Name', 'Type', 'Created', 'Last used', 'Actions']);
  for (const trigger of triggers) {
    t.tbody.append(
      t.row([
        h('span', { class: 'trigger-name' }, trigger.name),
        trigger.type,
        time(trigger.createdAt),
        trigger.lastUsedAt ? time(trigger.lastUsedAt) : 'never',
        rowActions(tab, trigger),
      ]),
    );
  }
  return h('div', { class: 'table-wrap' }, t.table);
}

/**
 * @param {SettingsTab} tab
 * @param {ListedTriggerAnswer} trigger
 */
function rowActions(tab, trigger) {
  const { name } = trigger;
  /** @param {string} label @param {string} aria @param {() => void} onclick @param {string} [extra] */
  const button = (label, aria, onclick, extra = '') =>
    h('button', { type: 'button', class: `button small${extra}`, 'aria-label': `${aria} ${name}`, onclick }, label);
  const { readOnly } = settings();
  return h(
    'div',
    { class: 'row-actions' },
    button('View', 'View', () => void view(tab, trigger)),
    readOnly ? null : button('Rotate key', 'Rotate key', () => void rotate(tab, trigger)),
    readOnly ? null : button('Delete', 'Delete', () => void remove(tab, trigger), ' danger-outline'),
  );
}

/**
 * A trigger was created: the list shows it, and its view shows its key.
 * @param {SettingsTab} tab
 * @param {CreatedTriggerAnswer} trigger
 */
async function onCreated(tab, trigger) {
  await loadList(tab);
  tab.status.textContent = `Created the trigger “${trigger.name}”.`;
  showView(tab, trigger, 'Trigger created. Copy its key now and keep it secret.');
}

/**
 * Ends what the shown view runs (its live deliveries) and empties it, or leaves it to `content`.
 * @param {SettingsTab} tab
 * @param {...import('./dom.js').Child} content
 */
function clearView(tab, ...content) {
  if (tab.viewScope) tab.viewScope.end();
  tab.viewScope = null;
  fill(tab.viewArea, ...content);
}

/**
 * @param {SettingsTab} tab
 * @param {ListedTriggerAnswer} trigger
 */
async function view(tab, trigger) {
  tab.errors.clear();
  tab.viewing = trigger.id;
  clearView(tab, loadingEl());
  try {
    /** @type {ViewedTriggerAnswer} */
    const full = await api('GET', triggerPath(trigger.id));
    if (!tab.scope.alive || tab.viewing !== trigger.id) return;
    showView(tab, full);
  } catch (error) {
    if (!tab.scope.alive || tab.viewing !== trigger.id) return;
    fill(tab.viewArea, alertEl(errorText(error)));
  }
}

/**
 * @param {SettingsTab} tab
 * @param {ListedTriggerAnswer} trigger
 */
async function rotate(tab, trigger) {
  tab.errors.clear();
  tab.status.textContent = '';
  const ok = await confirmDialog(
    `Rotate the key of “${trigger.name}”? A new key is made; the current keys keep working until the grace period ends.`,
    'Rotate key',
  );
  if (!ok || !tab.scope.alive) return;
  try {
    /** @type {RotatedKeyAnswer} */
    const rotated = await api('POST', `${triggerPath(trigger.id)}/rotate-key`);
    if (!tab.scope.alive) return;
    tab.status.textContent = `Rotated the key of “${trigger.name}”.`;
    showView(
      tab,
      { ...trigger, ...rotated, name: trigger.name, type: trigger.type },
      `New key. The old key works until ${formatTime(rotated.graceEndsAt)?.text ?? rotated.graceEndsAt}, then stops; copy this one now.`,
    );
  } catch (error) {
    tab.errors.show(error);
  }
}

/**
 * @param {SettingsTab} tab
 * @param {ListedTriggerAnswer} trigger
 */
async function remove(tab, trigger) {
  tab.errors.clear();
  tab.status.textContent = '';
  const ok = await confirmDialog(`Delete “${trigger.name}”? Its URL stops working; its runs stay in History.`, 'Delete');
  if (!ok || !tab.scope.alive) return;
  try {
    await api('DELETE', triggerPath(trigger.id));
    if (!tab.scope.alive) return;
    if (tab.viewing === trigger.id) {
      tab.viewing = null;
      clearView(tab);
    }
    await loadList(tab);
    tab.status.textContent = `Deleted the trigger “${trigger.name}”.`;
    focusEl(tab.h2);
  } catch (error) {
    tab.errors.show(error);
  }
}

/**
 * @param {SettingsTab} tab
 * @param {ShownTrigger} trigger
 * @param {string} [note]
 */
function showView(tab, trigger, note) {
  tab.viewing = trigger.id;
  clearView(tab);
  const viewScope = new Scope();
  tab.viewScope = viewScope;
  const close = () => {
    tab.viewing = null;
    clearView(tab);
    focusEl(tab.h2);
  };
  fill(tab.viewArea, triggerView(viewScope, { ...trigger, botId: trigger.botId || tab.bot.id }, note, close));
  focusEl(tab.viewArea.querySelector('h3'));
}
