// @ts-check
// Live updates: the bot's server-sent events (`GET api/events?botId=`).

import { apiUrl } from './api.js';

/** @typedef {import('../src/admin/admin-api-answers.js').RunEventAnswer} RunEventAnswer */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * The data of an `invocation` event for `botId`, or null when it is not one (bad JSON, another bot).
 * @param {string} data
 * @param {string} botId
 * @returns {RunEventAnswer | null}
 */
export function parseRunEvent(data, botId) {
  let event;
  try {
    event = JSON.parse(data);
  } catch {
    return null;
  }
  if (!event || typeof event.invocationId !== 'string') return null;
  return !event.botId || event.botId === botId ? event : null;
}

/**
 * @param {HTMLElement} liveEl
 * @param {string} text
 * @param {'connecting' | 'live' | 'closed' | 'off'} state
 */
export function setLive(liveEl, text, state) {
  liveEl.textContent = text;
  liveEl.dataset.state = state;
}

/**
 * Opens the bot's event stream while `scope` lives. `liveEl` (aria-live="polite") says "Live" or
 * "Reconnecting…". `onOpen` runs each time the stream (re)opens: events sent before it (between the page's
 * own fetch and the subscription, or while reconnecting) are not replayed, so the screen fetches once more.
 * @param {Scope} scope
 * @param {string} botId
 * @param {HTMLElement} liveEl
 * @param {(event: RunEventAnswer) => void} onInvocation
 * @param {() => void} [onOpen]
 * @returns {() => void} closes the stream
 */
export function openLive(scope, botId, liveEl, onInvocation, onOpen) {
  const source = new EventSource(apiUrl(`/events?botId=${encodeURIComponent(botId)}`));
  setLive(liveEl, 'Connecting…', 'connecting');
  source.addEventListener('open', () => {
    setLive(liveEl, 'Live', 'live');
    if (onOpen) onOpen();
  });
  source.addEventListener('error', () => {
    if (source.readyState === EventSource.CLOSED) setLive(liveEl, 'Live updates stopped. Reload the page to see new runs.', 'closed');
    else setLive(liveEl, 'Reconnecting…', 'connecting');
  });
  source.addEventListener('invocation', (event) => {
    const data = parseRunEvent(/** @type {MessageEvent<string>} */ (event).data, botId);
    if (data) onInvocation(data);
  });
  const close = () => source.close();
  scope.onEnd(close);
  return close;
}
