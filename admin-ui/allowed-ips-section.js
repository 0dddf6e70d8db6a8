// @ts-check
// A trigger's Allowed IPs (docs/security.md "IP allow-lists"): a textarea, one address or CIDR per line, and Save.
// Empty lets every address in. Read-only mode shows the list without a way to change it.

import { api, triggerPath } from './api.js';
import { errorSlot, field, h, heading, nextId, statusLine, subsection } from './dom.js';
import { settings } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AllowedIpsAnswer} AllowedIpsAnswer */
/** @typedef {import('./trigger-view.js').ShownTrigger} ShownTrigger */
/** @typedef {import('./scope.js').Scope} Scope */

/**
 * The lines of the textarea as a list: trimmed, blank lines left out.
 * @param {string} text
 */
export function allowedIpLines(text) {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** @param {string[]} list */
function savedText(list) {
  return list.length === 0
    ? 'Saved: every address may call this trigger.'
    : `Saved: ${list.length} address(es) or range(s) may call this trigger.`;
}

/**
 * @param {Scope} scope
 * @param {ShownTrigger} trigger
 */
export function allowedIpsSection(scope, trigger) {
  const title = heading(4, 'Allowed IPs', { id: nextId('allowed-ips') });
  const readOnly = settings().readOnly;
  const textarea = h('textarea', {
    class: 'mono',
    rows: '4',
    spellcheck: 'false',
    autocomplete: 'off',
    readonly: readOnly,
    placeholder: '203.0.113.0/24\n2001:db8::/32',
  });
  const { wrap } = field(
    'Allowed IPs',
    textarea,
    'One IPv4 or IPv6 address or CIDR per line, at most 100. Requests from any other address get 403. Empty: every address may call.',
  );
  const status = statusLine();
  const errors = errorSlot();
  const save = h('button', { type: 'submit', class: 'button primary' }, 'Save allowed IPs');
  const form = h(
    'form',
    {
      class: 'allowed-ips-form',
      onsubmit: async (/** @type {Event} */ event) => {
        event.preventDefault();
        errors.clear();
        status.textContent = '';
        save.disabled = true;
        try {
          /** @type {AllowedIpsAnswer} */
          const saved = await api('PUT', `${triggerPath(trigger.id)}/allowed-ips`, { allowedIps: allowedIpLines(textarea.value) });
          if (!scope.alive) return;
          textarea.value = saved.allowedIps.join('\n');
          status.textContent = savedText(saved.allowedIps);
        } catch (error) {
          if (scope.alive) errors.show(error);
        } finally {
          save.disabled = false;
        }
      },
    },
    wrap,
    readOnly ? null : h('div', { class: 'actions' }, save),
  );
  void (async () => {
    try {
      /** @type {{ allowedIps?: string[] }} */
      const full = trigger.allowedIps ? trigger : await api('GET', triggerPath(trigger.id));
      if (scope.alive) textarea.value = (full.allowedIps ?? []).join('\n');
    } catch (error) {
      if (scope.alive) errors.show(error);
    }
  })();
  return subsection(title, errors.el, status, form);
}
