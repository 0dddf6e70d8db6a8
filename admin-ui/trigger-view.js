// @ts-check
// A trigger's View: its URL and newest key (with copy buttons), curl commands, its Keys, its Callback and its Deliveries.

import { allowedIpsSection } from './allowed-ips-section.js';
import { triggerPath } from './api.js';
import { callbackSection } from './callback-section.js';
import { copyField } from './dialogs.js';
import { deliveriesSection } from './deliveries.js';
import { keysSection } from './trigger-keys.js';
import { signingSection } from './signing-section.js';
import { h, heading, nextId, readonlyInput, statusLine, time } from './dom.js';
import { curlCommands, KEY_PLACEHOLDER } from './format.js';

/** @typedef {import('../src/admin/admin-api-answers.js').ViewedTriggerAnswer} ViewedTriggerAnswer */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * A trigger as its view gets it: as `GET …/triggers/:id` answers it (with its callback), or after a create or
 * a key rotation (no callback: the view asks for it).
 * @typedef {Pick<ViewedTriggerAnswer, 'id' | 'name' | 'url'>
 *   & Partial<Pick<ViewedTriggerAnswer, 'type' | 'botId' | 'createdAt' | 'key' | 'callback' | 'allowedIps'>>} ShownTrigger
 */

/**
 * @param {Scope} scope
 * @param {ShownTrigger & { botId: string }} trigger
 * @param {string | undefined} note
 * @param {() => void} onClose
 */
export function triggerView(scope, trigger, note, onClose) {
  const title = heading(3, `Trigger “${trigger.name}”`, { id: nextId('trigger-view') });
  const copyStatus = statusLine();
  const deliveries = deliveriesSection(scope, {
    path: `${triggerPath(trigger.id)}/deliveries`,
    level: 4,
    caption: `Callback deliveries of “${trigger.name}”, newest first`,
    empty: 'No deliveries yet.',
    live: { botId: trigger.botId, triggerId: trigger.id },
  });
  return h(
    'section',
    { class: 'card trigger-view', 'aria-labelledby': title.id },
    title,
    note ? h('p', { class: 'note' }, note) : null,
    h(
      'p',
      { class: 'meta' },
      'Type ',
      h('strong', {}, trigger.type || 'webhook'),
      trigger.createdAt ? [' · created ', time(trigger.createdAt)] : null,
    ),
    addressFields(trigger, copyStatus),
    copyStatus,
    keysSection(scope, trigger),
    signingSection(scope, trigger),
    allowedIpsSection(scope, trigger),
    callbackSection(scope, trigger, deliveries),
    deliveries.el,
    h('div', { class: 'actions' }, h('button', { type: 'button', class: 'button', onclick: onClose }, 'Close')),
  );
}

/**
 * The URL, the key (or why it is not shown) and the two curl commands, each with a copy button.
 * @param {ShownTrigger} trigger
 * @param {HTMLElement} copyStatus
 */
function addressFields(trigger, copyStatus) {
  const hasKey = typeof trigger.key === 'string' && trigger.key !== '';
  const key = hasKey && trigger.key ? trigger.key : KEY_PLACEHOLDER;
  const url = trigger.url || '';
  const curl = curlCommands(url, key);
  /** @param {string} label @param {HTMLInputElement | HTMLTextAreaElement} control @param {string} button @param {string} what */
  const copyRow = (label, control, button, what) => copyField(label, control, button, what, copyStatus);
  /** @param {string} value */
  const readonlyText = (value) => h('textarea', { readonly: true, class: 'mono', rows: '3', spellcheck: 'false', value });
  return [
    copyRow('URL', readonlyInput(url), 'Copy URL', 'URL'),
    hasKey
      ? copyRow('Key', readonlyInput(key), 'Copy key', 'key')
      : h(
          'div',
          { class: 'field' },
          h('p', { class: 'label-like' }, 'Key'),
          h(
            'p',
            { class: 'note' },
            'The key is shown only once, when the trigger is created or its key rotated. To show keys here again, start the app with the ',
            h('code', {}, 'keySecret'),
            ' option set (16 characters or more): keys created or rotated after that are shown.',
          ),
        ),
    hasKey
      ? h('p', { class: 'hint' }, 'Keep the key secret: anyone with the URL and the key can start the bot and use up its credits.')
      : null,
    copyRow('Trigger with curl', readonlyText(curl.trigger), 'Copy trigger command', 'trigger command'),
    h(
      'p',
      { class: 'hint' },
      'It answers at once with ',
      h('code', {}, 'invocation.id'),
      '; put that id in place of ',
      h('code', {}, '<INVOCATION_ID>'),
      ' below.',
    ),
    copyRow('Wait for the outputs with curl', readonlyText(curl.wait), 'Copy wait command', 'wait command'),
  ];
}
