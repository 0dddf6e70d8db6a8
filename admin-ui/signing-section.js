// @ts-check
// A trigger's Signed requests (docs/security.md, "Signed requests"): its mode (off, with key, instead of key),
// its signing secrets (created, expires, status) with Rotate signing secret and Revoke, the new secret shown once,
// and an example of the headers a sender sends. Read-only mode shows the mode and secrets without controls.

import { api, triggerPath } from './api.js';
import { confirmDialog, copyField } from './dialogs.js';
import {
  alertEl,
  badge,
  dataTable,
  errorSlot,
  fill,
  focusEl,
  h,
  heading,
  loadingEl,
  nextId,
  readonlyInput,
  statusLine,
  subsection,
  time,
} from './dom.js';
import { formatTime, NONE } from './format.js';
import { settings } from './settings.js';

/** @typedef {import('../src/admin/admin-api-answers.js').AdminRequestSigningAnswer} AdminRequestSigningAnswer */
/** @typedef {import('../src/admin/admin-api-answers.js').AdminRotatedSigningSecretAnswer} AdminRotatedSigningSecretAnswer */
/** @typedef {AdminRequestSigningAnswer['mode']} Mode */
/** @typedef {import('./trigger-view.js').ShownTrigger} ShownTrigger */
/** @typedef {import('./scope.js').Scope} Scope */

/** @type {Array<{ mode: Mode, label: string, hint: string }>} */
const MODES = [
  { mode: 'off', label: 'Off', hint: 'X-Key only (the default).' },
  { mode: 'with-key', label: 'With key', hint: 'X-Key and a valid signature, both.' },
  { mode: 'instead-of-key', label: 'Instead of key', hint: 'A valid signature is enough; X-Key is not asked.' },
];

/**
 * @typedef {{
 *   scope: Scope,
 *   trigger: ShownTrigger,
 *   path: string,
 *   title: HTMLElement,
 *   body: HTMLElement,
 *   status: HTMLElement,
 *   copyStatus: HTMLElement,
 *   errors: import('./dom.js').ErrorSlot,
 *   fresh: string | null,
 * }} SigningSection
 */

/**
 * @param {Scope} scope
 * @param {ShownTrigger} trigger
 */
export function signingSection(scope, trigger) {
  /** @type {SigningSection} */
  const section = {
    scope,
    trigger,
    path: `${triggerPath(trigger.id)}/signing`,
    title: heading(4, 'Signed requests', { id: nextId('signing') }),
    body: h('div', {}, loadingEl()),
    status: statusLine(),
    copyStatus: statusLine(),
    errors: errorSlot(),
    fresh: null, // the secret of the last rotation: shown this once
  };
  void load(section);
  return subsection(section.title, section.errors.el, section.status, section.body);
}

/** @param {SigningSection} section */
async function load(section) {
  try {
    /** @type {AdminRequestSigningAnswer} */
    const signing = await api('GET', section.path);
    if (section.scope.alive) show(section, signing);
  } catch (error) {
    if (section.scope.alive) fill(section.body, alertEl(String(error instanceof Error ? error.message : error)));
  }
}

/**
 * @param {SigningSection} section
 * @param {AdminRequestSigningAnswer} signing
 */
function show(section, signing) {
  const readOnly = settings().readOnly;
  const usable = signing.secrets.some((s) => s.status === 'active' || s.status === 'expiring');
  fill(
    section.body,
    h(
      'p',
      { class: 'hint' },
      'Ask the sender to sign each request (Standard Webhooks) with a secret of this trigger: a leaked key alone is then not enough, and a request replayed or older than 5 minutes is refused.',
    ),
    readOnly
      ? h('p', {}, 'Mode: ', h('strong', {}, MODES.find((m) => m.mode === signing.mode)?.label ?? signing.mode))
      : modeForm(section, signing.mode),
    signing.mode !== 'off' && !usable
      ? alertEl('No usable signing secret: every request to this trigger is refused until you rotate one in.')
      : null,
    freshSecret(section),
    secretsTable(section, signing, readOnly),
    readOnly
      ? null
      : h(
          'div',
          { class: 'actions signing-actions' },
          h('button', { type: 'button', class: 'button', onclick: () => void rotate(section) }, 'Rotate signing secret'),
        ),
    exampleHeaders(signing.mode),
  );
}

/**
 * The mode as three radio buttons and a Save button.
 * @param {SigningSection} section
 * @param {Mode} current
 */
function modeForm(section, current) {
  const name = nextId('signing-mode');
  const radios = MODES.map(({ mode, label, hint }) => {
    const input = h('input', { type: 'radio', name, value: mode, id: nextId('signing-mode-option') });
    input.checked = mode === current;
    return h('div', { class: 'check' }, input, h('label', { for: input.id }, h('strong', {}, label), ': ', hint));
  });
  const form = h(
    'form',
    { class: 'signing-form', 'aria-label': 'Signed requests mode' },
    h('fieldset', { class: 'signing-mode' }, h('legend', {}, 'Mode'), radios),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'button primary' }, 'Save mode')),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const chosen = form.querySelector('input[type="radio"]:checked');
    if (chosen instanceof HTMLInputElement) void setMode(section, /** @type {Mode} */ (chosen.value));
  });
  return form;
}

/** @param {SigningSection} section */
function freshSecret(section) {
  if (!section.fresh) return null;
  return [
    copyField('New signing secret', readonlyInput(section.fresh), 'Copy signing secret', 'signing secret', section.copyStatus),
    section.copyStatus,
    h('p', { class: 'hint' }, 'Shown this once: give it to the sender now. It signs each request with it.'),
  ];
}

/**
 * @param {SigningSection} section
 * @param {AdminRequestSigningAnswer} signing
 * @param {boolean} readOnly
 */
function secretsTable(section, signing, readOnly) {
  if (signing.secrets.length === 0) return h('p', { class: 'muted' }, 'No signing secret yet.');
  const t = dataTable(`Signing secrets of “${section.trigger.name}”, newest first`, [
    'Created',
    'Expires',
    'Status',
    ...(readOnly ? [] : ['']),
  ]);
  for (const s of signing.secrets) {
    const revoke =
      s.status === 'active' || s.status === 'expiring'
        ? h(
            'button',
            {
              type: 'button',
              class: 'button small danger-outline',
              'aria-label': `Revoke the secret created ${formatTime(s.createdAt)?.text ?? s.createdAt}`,
            },
            'Revoke',
          )
        : NONE;
    if (revoke instanceof HTMLElement) revoke.addEventListener('click', () => void revokeSecret(section, s.id));
    t.tbody.append(t.row([time(s.createdAt), s.revokedAt ? NONE : time(s.expiresAt), badge(s.status), ...(readOnly ? [] : [revoke])]));
  }
  return h('div', { class: 'table-wrap' }, t.table);
}

/** What a sender adds to each request, as text. @param {Mode} mode */
function exampleHeaders(mode) {
  const lines = [
    'POST <trigger URL>',
    'content-type: application/json',
    ...(mode === 'instead-of-key' ? [] : ['x-key: <TRIGGER_KEY>']),
    'webhook-id: msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
    'webhook-timestamp: 1767225600',
    'webhook-signature: v1,<base64 of HMAC-SHA256(secret, "{webhook-id}.{webhook-timestamp}.{body}")>',
  ];
  return h(
    'div',
    { class: 'field' },
    h('p', { class: 'label-like' }, 'Headers a sender sends'),
    h('pre', { class: 'mono example' }, lines.join('\n')),
    h(
      'p',
      { class: 'hint' },
      'Any Standard Webhooks library signs this way. The timestamp is in seconds; each webhook-id is accepted once.',
    ),
  );
}

/**
 * @param {SigningSection} section
 * @param {Mode} mode
 */
async function setMode(section, mode) {
  section.errors.clear();
  section.status.textContent = '';
  try {
    /** @type {AdminRequestSigningAnswer} */
    const saved = await api('PUT', section.path, { mode });
    if (!section.scope.alive) return;
    show(section, saved);
    section.status.textContent = `Saved: signed requests ${MODES.find((m) => m.mode === mode)?.label.toLowerCase() ?? mode}.`;
    focusEl(section.title);
  } catch (error) {
    if (section.scope.alive) section.errors.show(error);
  }
}

/** @param {SigningSection} section */
async function rotate(section) {
  section.errors.clear();
  section.status.textContent = '';
  const ok = await confirmDialog(
    `Rotate the signing secret of “${section.trigger.name}”? The current secrets keep working for the rotation grace period, then stop.`,
    'Rotate signing secret',
  );
  if (!ok || !section.scope.alive) return;
  try {
    /** @type {AdminRotatedSigningSecretAnswer} */
    const rotated = await api('POST', `${section.path}/secrets`);
    if (!section.scope.alive) return;
    section.fresh = rotated.secret;
    show(section, rotated.signing);
    section.status.textContent = 'Rotated the signing secret: give the new one to the sender.';
    focusEl(section.title);
  } catch (error) {
    if (section.scope.alive) section.errors.show(error);
  }
}

/**
 * @param {SigningSection} section
 * @param {string} secretId
 */
async function revokeSecret(section, secretId) {
  section.errors.clear();
  section.status.textContent = '';
  const ok = await confirmDialog('Revoke this signing secret? Requests signed with it are refused from now on.', 'Revoke secret');
  if (!ok || !section.scope.alive) return;
  try {
    /** @type {AdminRequestSigningAnswer} */
    const signing = await api('POST', `${section.path}/secrets/${encodeURIComponent(secretId)}/revoke`);
    if (!section.scope.alive) return;
    section.fresh = null;
    show(section, signing);
    section.status.textContent = 'Revoked the signing secret.';
    focusEl(section.title);
  } catch (error) {
    if (section.scope.alive) section.errors.show(error);
  }
}
