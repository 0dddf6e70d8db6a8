// @ts-check
// #/ : every bot with its owner account, balance, triggers and runs of the last 24 hours.

import { api } from './api.js';
import { dataTable, h, heading } from './dom.js';
import { formatNumber, formatRecentRuns } from './format.js';
import { loading, render, renderFailure, setTitle } from './page.js';
import { botHref } from './routes.js';
import { settings } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminBotAnswer} AdminBotAnswer */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * The balance of a bot's owner account as the screens show it.
 * @param {AdminBotAnswer} bot
 */
export function balanceText(bot) {
  return bot.accountCredits === null || bot.accountCredits === undefined ? 'not opened yet' : formatNumber(bot.accountCredits);
}

/** @param {Scope} scope */
export async function showBots(scope) {
  loading('Bots');
  /** @type {AdminBotAnswer[]} */
  let bots;
  try {
    bots = await api('GET', '/bots');
  } catch (error) {
    if (scope.alive) renderFailure('Bots', error);
    return;
  }
  if (!scope.alive) return;
  setTitle('Bots');
  if (!Array.isArray(bots) || bots.length === 0) {
    render(heading(1, 'Bots'), h('p', { class: 'empty' }, 'No bots are registered. Add a provider with @WebhookBot().'));
    return;
  }
  render(heading(1, 'Bots'), h('div', { class: 'table-wrap' }, botsTable(bots)));
}

/** @param {AdminBotAnswer[]} bots */
function botsTable(bots) {
  const t = dataTable('Bots', ['Bot', 'Owner account', 'Account balance (credits)', 'Triggers', 'Runs in the last 24 h']);
  for (const bot of bots) {
    t.tbody.append(
      t.row([
        h('a', { href: botHref(bot.id, 'settings') }, bot.name || bot.id),
        h('span', { class: 'mono' }, bot.accountId),
        balanceText(bot),
        formatNumber(bot.triggers),
        formatRecentRuns(bot.runsLast24h, settings().recentRunsCap),
      ]),
    );
  }
  return t.table;
}
