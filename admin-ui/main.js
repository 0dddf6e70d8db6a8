// @ts-check
// Webhook triggers admin screens: a small hash-routed single-page app of native ES modules, no framework and
// no build step. Routes are in routes.js; it talks to the JSON API at <html data-api> (docs/admin.md).

import { h } from './dom.js';
import { route } from './router.js';
import { settings } from './settings.js';

/** With the host's sign-out path (the admin's `signOutPath`), a Sign out button in the header: a form POST to it. */
function addSignOut() {
  const path = settings().signOutPath;
  const header = document.querySelector('.site-header-inner');
  if (!path || !header) return;
  const form = h(
    'form',
    { method: 'post', action: path, class: 'sign-out' },
    h('button', { type: 'submit', class: 'button sign-out-button' }, 'Sign out'),
  );
  header.append(form);
}

addSignOut();
window.addEventListener('hashchange', route);
route();
