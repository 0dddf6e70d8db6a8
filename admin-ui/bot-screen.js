// @ts-check
// #/bots/:botId/settings and #/bots/:botId/history: heading, tabs, owner account, and the tab's panel.

import { api, botPath, isStatus } from './api.js';
import { balanceText } from './bots-screen.js';
import { errorSlot, fact, field, focusEl, h, heading, nextId, statusLine } from './dom.js';
import { formatNumber } from './format.js';
import { renderHistory } from './history-tab.js';
import { loading, render, renderFailure, setTitle } from './page.js';
import { botHref } from './routes.js';
import { Scope } from './scope.js';
import { settings } from './settings.js';
import { renderSettings } from './triggers-tab.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminBotAnswer} AdminBotAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').AdminAccountAnswer} AdminAccountAnswer */
/** @typedef {import('./routes.js').BotTab} BotTab */

/** @type {[BotTab, string][]} */
const TABS = [
  ['settings', 'Settings'],
  ['history', 'History'],
];

/**
 * @param {Scope} scope
 * @param {{ showTab?: (tab: BotTab) => void }} shown the router's record of this page: gets `showTab`
 * @param {string} botId
 * @param {BotTab} tab
 */
export async function showBot(scope, shown, botId, tab) {
  loading(tab === 'history' ? 'History' : 'Bot Triggers');
  /** @type {AdminBotAnswer} */
  let bot;
  try {
    bot = await api('GET', botPath(botId));
  } catch (error) {
    if (scope.alive) renderFailure(isStatus(error, 404) ? 'Bot not found' : 'Bot', error);
    return;
  }
  if (!scope.alive) return;
  const name = bot.name || bot.id;
  const panelId = nextId('bot-panel');
  const tabs = TABS.map(([key, label]) =>
    h('a', { role: 'tab', id: `tab-${key}`, href: botHref(botId, key), 'aria-controls': panelId, 'data-tab': key }, label),
  );
  const tablist = h('div', { role: 'tablist', 'aria-label': `${name} pages`, class: 'tabs' }, tabs);
  tablist.addEventListener('keydown', (event) => moveBetweenTabs(tabs, event));
  const panel = h('div', { role: 'tabpanel', id: panelId, class: 'tab-panel' });
  render(
    heading(1, name),
    h('p', { class: 'subtitle' }, 'Bot ', h('span', { class: 'mono' }, bot.id)),
    tablist,
    accountSection(bot),
    panel,
  );

  /** @type {Scope | null} */
  let panelScope = null;
  scope.onEnd(() => panelScope && panelScope.end());
  /** @param {BotTab} key @param {boolean} first */
  const showTab = (key, first) => {
    if (panelScope) panelScope.end();
    panelScope = new Scope();
    const focusOnTab = selectTab(tabs, panel, key);
    showPanel(panelScope, panel, bot, key, !first && !focusOnTab);
  };
  shown.showTab = (key) => showTab(key, false);
  showTab(tab, true);
}

/**
 * Arrow keys, Home and End move between the tabs (and go to the tab's address).
 * @param {HTMLAnchorElement[]} tabs
 * @param {KeyboardEvent} event
 */
function moveBetweenTabs(tabs, event) {
  const index = tabs.indexOf(/** @type {HTMLAnchorElement} */ (document.activeElement));
  if (index < 0) return;
  let next = -1;
  if (event.key === 'ArrowRight') next = (index + 1) % tabs.length;
  else if (event.key === 'ArrowLeft') next = (index - 1 + tabs.length) % tabs.length;
  else if (event.key === 'Home') next = 0;
  else if (event.key === 'End') next = tabs.length - 1;
  if (next < 0) return;
  event.preventDefault();
  tabs[next].focus();
  location.hash = tabs[next].getAttribute('href') ?? '';
}

/**
 * Marks `key`'s tab selected; returns whether focus was on a tab (it then moves to the selected one).
 * @param {HTMLAnchorElement[]} tabs
 * @param {HTMLElement} panel
 * @param {BotTab} key
 */
function selectTab(tabs, panel, key) {
  const focusOnTab = tabs.includes(/** @type {HTMLAnchorElement} */ (document.activeElement));
  for (const t of tabs) {
    const selected = t.dataset.tab === key;
    t.setAttribute('aria-selected', String(selected));
    t.setAttribute('tabindex', selected ? '0' : '-1');
    if (selected) panel.setAttribute('aria-labelledby', t.id);
  }
  if (focusOnTab) focusEl(tabs.find((t) => t.dataset.tab === key));
  return focusOnTab;
}

/**
 * @param {Scope} scope
 * @param {HTMLElement} panel
 * @param {AdminBotAnswer} bot
 * @param {BotTab} key
 * @param {boolean} focusHeading
 */
function showPanel(scope, panel, bot, key, focusHeading) {
  const name = bot.name || bot.id;
  if (key === 'history') {
    setTitle('History', name);
    renderHistory(scope, panel, bot, focusHeading);
  } else {
    setTitle('Bot Triggers', name);
    renderSettings(scope, panel, bot, focusHeading);
  }
}

/** @param {AdminBotAnswer} bot */
function accountSection(bot) {
  const valueEl = h('dd', {}, balanceText(bot));
  const section = h(
    'section',
    { class: 'account', 'aria-label': 'Owner account' },
    h(
      'dl',
      { class: 'facts inline' },
      fact('Owner account', bot.accountId, { class: 'mono' }),
      h('div', {}, h('dt', {}, 'Account balance (credits)'), valueEl),
      typeof bot.creditsPerRun === 'number' ? fact('Credits per run', formatNumber(bot.creditsPerRun)) : null,
    ),
  );
  if (!settings().readOnly) section.append(...balanceForm(bot, valueEl));
  return section;
}

/**
 * The form that sets the owner account's balance, its error slot and its status line.
 * @param {AdminBotAnswer} bot
 * @param {HTMLElement} valueEl shows the balance
 */
function balanceForm(bot, valueEl) {
  const input = h('input', {
    type: 'number',
    min: '0',
    step: '1',
    inputmode: 'numeric',
    required: true,
    value: typeof bot.accountCredits === 'number' ? String(bot.accountCredits) : '0',
  });
  const { wrap } = field('New account balance (credits)', input);
  const errors = errorSlot();
  const status = statusLine();
  const save = h('button', { type: 'submit', class: 'button' }, 'Save balance');
  const form = h('form', { class: 'inline-form', novalidate: true }, wrap, save);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    errors.clear();
    status.textContent = '';
    const credits = Number(input.value);
    if (input.value.trim() === '' || !Number.isInteger(credits) || credits < 0) {
      input.setAttribute('aria-invalid', 'true');
      errors.show('Credits must be a whole number, 0 or more.');
      input.focus();
      return;
    }
    input.removeAttribute('aria-invalid');
    save.disabled = true;
    try {
      /** @type {AdminAccountAnswer | null} */
      const account = await api('PUT', `/accounts/${encodeURIComponent(bot.accountId)}/credits`, { credits });
      const value = account && typeof account.credits === 'number' ? account.credits : credits;
      valueEl.textContent = formatNumber(value);
      input.value = String(value);
      status.textContent = `Saved: the account has ${formatNumber(value)} credits.`;
    } catch (error) {
      errors.show(error);
    } finally {
      save.disabled = false;
    }
  });
  return [form, errors.el, status];
}
