// @ts-check
// #/invocations/:id : one run, followed live while it is queued or running; Cancel and Replay.

import { api, botPath, isStatus, runPath } from './api.js';
import { deliveriesSection } from './deliveries.js';
import { confirmDialog } from './dialogs.js';
import { errorSlot, fill, focusEl, h, heading, liveRegion, statusLine } from './dom.js';
import { openLive, setLive } from './live.js';
import { loading, render, renderFailure, setTitle } from './page.js';
import { replaySection } from './replay.js';
import { botHref } from './routes.js';
import { runSummary } from './run-summary.js';
import { isActive, settings } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminRunAnswer} AdminRunAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').AdminBotAnswer} AdminBotAnswer */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * The screen's parts and state.
 * @typedef {{
 *   scope: Scope,
 *   id: string,
 *   h1: HTMLElement,
 *   live: HTMLElement,
 *   summary: HTMLElement,
 *   actionErrors: import('./dom.js').ErrorSlot,
 *   actionStatus: HTMLElement,
 *   deliveries: { refresh(): Promise<void> },
 *   current: AdminRunAnswer,
 *   closeLive: (() => void) | null,
 *   fetchSeq: number,
 * }} RunScreen
 */

/**
 * @param {Scope} scope
 * @param {string} id
 */
export async function showRun(scope, id) {
  loading(`Run ${id}`);
  /** @type {AdminRunAnswer} */
  let run;
  try {
    run = await api('GET', runPath(id));
  } catch (error) {
    if (scope.alive) renderFailure(isStatus(error, 404) ? 'Run not found' : `Run ${id}`, error);
    return;
  }
  if (!scope.alive) return;
  const botName = await botNameOf(run.botId);
  if (!scope.alive) return;
  setTitle(`Run ${run.id}`, botName);
  const deliveries = deliveriesSection(scope, {
    path: `${runPath(id)}/deliveries`,
    level: 2,
    caption: `Callback deliveries of run ${run.id}, oldest first`,
    empty: 'No deliveries for this run.',
  });
  /** @type {RunScreen} */
  const screen = {
    scope,
    id,
    h1: heading(1, `Run ${run.id}`, { class: 'mono-heading' }),
    live: liveRegion(),
    summary: h('div', { class: 'run-summary' }),
    actionErrors: errorSlot(),
    actionStatus: statusLine(),
    deliveries,
    current: run,
    closeLive: null,
    fetchSeq: 0,
  };
  fill(screen.summary, ...runSummary(run, cancelButton(screen, run)));
  const back = h('p', { class: 'back' }, h('a', { href: botHref(run.botId, 'history') }, `Back to the History of ${botName}`));
  const replay = settings().readOnly ? null : replaySection(scope, run);
  render(
    screen.h1,
    back,
    h('div', { class: 'run-live' }, screen.live),
    screen.actionErrors.el,
    screen.actionStatus,
    screen.summary,
    deliveries.el,
    replay,
  );
  if (isActive(run.status)) follow(screen, run.botId);
}

/**
 * The bot's name; its id when the bot cannot be read.
 * @param {string} botId
 */
async function botNameOf(botId) {
  try {
    /** @type {AdminBotAnswer | null} */
    const bot = await api('GET', botPath(botId));
    if (bot && bot.name) return bot.name;
  } catch {
    // The bot's id does as its name.
  }
  return botId;
}

/**
 * Reads the run again on each of its events, and when the stream (re)opens.
 * @param {RunScreen} screen
 * @param {string} botId
 */
function follow(screen, botId) {
  screen.closeLive = openLive(
    screen.scope,
    botId,
    screen.live,
    (event) => {
      if (event.invocationId === screen.id) void refresh(screen);
    },
    () => void refresh(screen),
  );
}

/** @param {RunScreen} screen */
async function refresh(screen) {
  const n = ++screen.fetchSeq;
  try {
    /** @type {AdminRunAnswer} */
    const fresh = await api('GET', runPath(screen.id));
    if (!screen.scope.alive || n !== screen.fetchSeq) return;
    update(screen, fresh);
  } catch {
    // Kept as shown; the next event fetches again.
  }
}

/**
 * @param {RunScreen} screen
 * @param {AdminRunAnswer} fresh
 */
function update(screen, fresh) {
  const hadFocus = screen.summary.contains(document.activeElement);
  // A change of state may come with a delivery (started, completed): the log is read again.
  if (fresh.status !== screen.current.status) void screen.deliveries.refresh();
  screen.current = fresh;
  fill(screen.summary, ...runSummary(fresh, cancelButton(screen, fresh)));
  if (hadFocus) focusEl(screen.h1);
  if (!isActive(fresh.status) && screen.closeLive) {
    screen.closeLive();
    screen.closeLive = null;
    setLive(screen.live, `Finished: ${fresh.status}.`, 'off');
  }
}

/**
 * @param {RunScreen} screen
 * @param {AdminRunAnswer} run
 */
function cancelButton(screen, run) {
  if (settings().readOnly || !isActive(run.status)) return null;
  const button = h('button', { type: 'button', class: 'button danger' }, 'Cancel run');
  button.addEventListener('click', () => void cancel(screen, button));
  return h('div', { class: 'actions' }, button);
}

/**
 * @param {RunScreen} screen
 * @param {HTMLButtonElement} button
 */
async function cancel(screen, button) {
  screen.actionErrors.clear();
  screen.actionStatus.textContent = '';
  const ok = await confirmDialog('Cancel this run?', 'Cancel run');
  if (!ok || !screen.scope.alive) return;
  button.disabled = true;
  try {
    /** @type {AdminRunAnswer | null} */
    const cancelled = await api('POST', `${runPath(screen.id)}/cancel`);
    if (!screen.scope.alive) return;
    screen.fetchSeq += 1; // an answer still on its way is older than this one
    update(screen, cancelled && cancelled.id ? cancelled : screen.current);
    screen.actionStatus.textContent = 'Cancel requested.';
    if (!cancelled || !cancelled.id) void refresh(screen);
    focusEl(screen.h1);
  } catch (error) {
    button.disabled = false;
    screen.actionErrors.show(error);
    if (isStatus(error, 409)) void refresh(screen);
  }
}
