// @ts-check
// Shows the screen of the address; a bot's tab change keeps the bot's page and swaps its panel.

import { showBot } from './bot-screen.js';
import { showBots } from './bots-screen.js';
import { closeDialogs } from './dialogs.js';
import { setRetry, showNotFound } from './page.js';
import { hashPath, parseRoute } from './routes.js';
import { showAudit } from './audit-screen.js';
import { showOverview } from './overview-screen.js';
import { showRun } from './run-screen.js';
import { Scope } from './scope.js';

/** @typedef {{ scope: Scope, botId?: string, showTab?: (tab: import('./routes.js').BotTab) => void }} Shown */

/** @type {Shown | null} */
let shown = null;

export function route() {
  closeDialogs();
  const target = parseRoute(hashPath(location.hash));
  if (target.kind === 'bot' && shown && shown.botId === target.botId && shown.showTab) {
    shown.showTab(target.tab);
    return;
  }
  if (shown) shown.scope.end();
  const scope = new Scope();
  /** @type {Shown} */
  const page = { scope };
  shown = page;
  if (target.kind === 'bots') void showBots(scope);
  else if (target.kind === 'bot') {
    page.botId = target.botId;
    void showBot(scope, page, target.botId, target.tab);
  } else if (target.kind === 'redirect') location.replace(target.hash);
  else if (target.kind === 'run') void showRun(scope, target.id);
  else if (target.kind === 'audit') void showAudit(scope, target.triggerId);
  else if (target.kind === 'overview') void showOverview(scope, target.window);
  else showNotFound();
}

setRetry(route);
