// Webhook triggers admin screens: a small hash-routed single-page app, no framework and no build step.
// Routes: #/ (Bots), #/bots/:botId/settings, #/bots/:botId/history, #/invocations/:id.
// It talks to the JSON API at <html data-api> (docs/admin.md). Every string that comes from the API is
// rendered as text (textContent / text nodes), never parsed as HTML; nothing here needs 'unsafe-inline'.

const root = document.documentElement;
const API = root.dataset.api || '';
const READ_ONLY = root.dataset.readOnly === 'true';
const PRODUCT = 'Webhook triggers';
const PAGE_SIZE = 50;
const STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out'];
const ACTIVE = new Set(['queued', 'running']);
const KEY_PLACEHOLDER = '<TRIGGER_KEY>';
const MAX_RESULT_LINES = 3; // outputs listed in a History row; the run detail lists them all

const main = document.getElementById('main');
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const numberFormat = new Intl.NumberFormat();

// ---------------------------------------------------------------------------------------------------
// DOM helpers

/**
 * Creates an element. Props: `class`, `text`, `value`, `on<event>` (listeners), anything else becomes an
 * attribute (true → empty attribute; null/undefined/false → left out). Children: nodes or strings (as text).
 */
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (name === 'class') el.className = value;
    else if (name === 'text') el.textContent = value;
    else if (name === 'value') el.value = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

/** Replaces the children of `el` (null, undefined and false children are left out). */
function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

let uid = 0;
function nextId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

function setTitle(...parts) {
  document.title = [...parts.filter(Boolean), PRODUCT].join(' — ');
}

function heading(level, text, props) {
  return h(`h${level}`, { tabindex: '-1', ...props }, text);
}

function loadingEl() {
  return h('p', { class: 'loading', role: 'status' }, 'Loading…');
}

function alertEl(text) {
  return h('p', { class: 'error', role: 'alert' }, text);
}

/** A spot for one error at a time: shows an element with role="alert" only while there is an error. */
function errorSlot() {
  const el = h('div', { class: 'error-slot' });
  return {
    el,
    show(error) {
      fill(el, alertEl(typeof error === 'string' ? error : errorText(error)));
    },
    clear() {
      el.replaceChildren();
    },
  };
}

function focusEl(el) {
  if (el && el.isConnected) el.focus({ preventScroll: false });
}

function time(iso) {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return h('time', { datetime: date.toISOString() }, dateFormat.format(date));
}

function num(value) {
  return typeof value === 'number' ? numberFormat.format(value) : '—';
}

function duration(ms) {
  if (typeof ms !== 'number') return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min ${Math.round(s - min * 60)} s`;
  return `${Math.floor(min / 60)} h ${min % 60} min`;
}

function badge(status) {
  return h('span', { class: `badge badge-${String(status).replace(/[^a-z_]/g, '')}` }, String(status));
}

function botHref(botId, tab) {
  return `#/bots/${encodeURIComponent(botId)}/${tab}`;
}

function runHref(id) {
  return `#/invocations/${encodeURIComponent(id)}`;
}

/** A labelled form field: returns the wrapper and the control. */
function field(labelText, control, hint) {
  if (!control.id) control.id = nextId('f');
  const hintEl = hint ? h('p', { class: 'hint', id: `${control.id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  const wrap = h('div', { class: 'field' }, h('label', { for: control.id }, labelText), control, hintEl);
  return { wrap, control };
}

/** A data table; narrow screens show each row as a card (the cells carry their column label). */
function dataTable(caption, columns) {
  const tbody = h('tbody', { role: 'rowgroup' });
  const table = h(
    'table',
    { class: 'data', role: 'table' },
    h('caption', { class: 'visually-hidden' }, caption),
    h(
      'thead',
      { role: 'rowgroup' },
      h(
        'tr',
        { role: 'row' },
        columns.map((c) => h('th', { scope: 'col', role: 'columnheader' }, c)),
      ),
    ),
    tbody,
  );
  const row = (cells) => h('tr', { role: 'row' }, cellsFor(columns, cells));
  return { table, tbody, row, cells: (cells) => cellsFor(columns, cells) };
}

function cellsFor(columns, cells) {
  return cells.map((content, i) => h('td', { role: 'cell', 'data-label': columns[i] }, content));
}

// ---------------------------------------------------------------------------------------------------
// API

class ApiError extends Error {
  constructor(status, message, method) {
    super(message);
    this.status = status;
    this.method = method;
  }
}

function messageOf(body) {
  if (!body || typeof body !== 'object') return '';
  const { message } = body;
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : '';
}

async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (method !== 'GET') {
    init.headers['Content-Type'] = 'application/json';
    init.headers['X-Webhook-Admin'] = '1';
    // Always a JSON body: some servers (Fastify) refuse an empty body sent as application/json.
    init.body = JSON.stringify(body === undefined ? {} : body);
  }
  let res;
  try {
    res = await fetch(API + path, init);
  } catch {
    throw new ApiError(0, 'network error', method);
  }
  const text = res.status === 204 ? '' : await res.text().catch(() => '');
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) throw new ApiError(res.status, messageOf(data) || res.statusText || `HTTP ${res.status}`, method);
  return data;
}

function errorText(error) {
  if (!(error instanceof ApiError)) return `Something went wrong: ${error instanceof Error ? error.message : String(error)}`;
  const { status, message, method } = error;
  if (status === 0) return 'Could not reach the server (network error). Check the connection, then try again.';
  if (status === 401 || (status === 403 && method === 'GET')) {
    return `You are not signed in, or your admin token is wrong (the server answered ${status}: ${message}).`;
  }
  if (status === 403) {
    return `The server refused this change (it answered 403: ${message}). Changes may be disabled, or you are not signed in as an admin.`;
  }
  if (status >= 500) return `Server error ${status}: ${message}`;
  return message;
}

const botPath = (botId) => `/bots/${encodeURIComponent(botId)}`;
const triggerPath = (triggerId) => `/triggers/${encodeURIComponent(triggerId)}`;
const runPath = (id) => `/invocations/${encodeURIComponent(id)}`;

// ---------------------------------------------------------------------------------------------------
// Live updates (server-sent events)

/**
 * Opens the bot's event stream while `scope` lives. `liveEl` (aria-live="polite") says "Live" or
 * "Reconnecting…". `onOpen` runs each time the stream (re)opens: events sent before it (between the page's
 * own fetch and the subscription, or while reconnecting) are not replayed, so the screen fetches once more.
 */
function openLive(scope, botId, liveEl, onInvocation, onOpen) {
  const source = new EventSource(`${API}/events?botId=${encodeURIComponent(botId)}`);
  liveEl.textContent = 'Connecting…';
  liveEl.dataset.state = 'connecting';
  source.addEventListener('open', () => {
    liveEl.textContent = 'Live';
    liveEl.dataset.state = 'live';
    if (onOpen) onOpen();
  });
  source.addEventListener('error', () => {
    if (source.readyState === EventSource.CLOSED) {
      liveEl.textContent = 'Live updates stopped. Reload the page to see new runs.';
      liveEl.dataset.state = 'closed';
    } else {
      liveEl.textContent = 'Reconnecting…';
      liveEl.dataset.state = 'connecting';
    }
  });
  source.addEventListener('invocation', (event) => {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    if (data && typeof data.invocationId === 'string' && (!data.botId || data.botId === botId)) onInvocation(data);
  });
  const close = () => source.close();
  scope.onEnd(close);
  return close;
}

function liveRegion() {
  return h('p', { class: 'live', 'aria-live': 'polite', 'data-state': 'off' });
}

// ---------------------------------------------------------------------------------------------------
// Dialogs and clipboard

const openDialogs = new Set();

/** A modal confirmation (native <dialog>): resolves true when confirmed, false on "Keep it" or Escape. */
function confirmDialog(question, confirmLabel) {
  return new Promise((resolve) => {
    const opener = document.activeElement;
    const questionId = nextId('dialog-question');
    const yes = h('button', { type: 'button', class: 'button danger' }, confirmLabel);
    const no = h('button', { type: 'button', class: 'button' }, 'Keep it');
    const dialog = h(
      'dialog',
      { class: 'confirm', 'aria-labelledby': questionId },
      h('p', { id: questionId, class: 'dialog-question' }, question),
      h('div', { class: 'actions' }, yes, no),
    );
    let confirmed = false;
    yes.addEventListener('click', () => {
      confirmed = true;
      dialog.close();
    });
    no.addEventListener('click', () => dialog.close());
    dialog.addEventListener('close', () => {
      openDialogs.delete(dialog);
      dialog.remove();
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
      resolve(confirmed);
    });
    document.body.append(dialog);
    openDialogs.add(dialog);
    dialog.showModal();
    no.focus();
  });
}

async function copyFrom(control, statusEl, what) {
  const text = control.value;
  try {
    if (!navigator.clipboard || !window.isSecureContext) throw new Error('no clipboard');
    await navigator.clipboard.writeText(text);
    statusEl.textContent = `Copied the ${what}.`;
  } catch {
    control.focus();
    control.select();
    let copied = false;
    try {
      copied = document.execCommand('copy');
    } catch {
      copied = false;
    }
    statusEl.textContent = copied ? `Copied the ${what}.` : `The ${what} is selected: press Ctrl+C (⌘C on a Mac) to copy it.`;
  }
}

function shellQuote(value) {
  return `'${String(value).replace(/'/g, `'\\''`)}'`;
}

// ---------------------------------------------------------------------------------------------------
// Router

class Scope {
  constructor() {
    this.alive = true;
    this.ends = [];
  }
  onEnd(fn) {
    this.ends.push(fn);
  }
  end() {
    this.alive = false;
    for (const fn of this.ends.splice(0)) {
      try {
        fn();
      } catch {
        // a cleanup failing must not stop the others
      }
    }
  }
}

let page = null; // { scope, kind, botId?, showTab? }

function currentPath() {
  const path = location.hash.replace(/^#/, '');
  return path === '' ? '/' : path;
}

function decode(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function route() {
  // Leaving a screen (e.g. with the Back button) answers an open question with "Keep it".
  for (const dialog of openDialogs) dialog.close();
  const path = currentPath();
  const bot = path.match(/^\/bots\/([^/]+)\/(settings|history)\/?$/);
  if (bot && page && page.kind === 'bot' && page.botId === decode(bot[1]) && page.showTab) {
    page.showTab(bot[2]);
    return;
  }
  if (page) page.scope.end();
  const scope = new Scope();
  page = { scope, kind: 'other' };
  if (path === '/' || path === '/bots' || path === '/bots/') {
    void showBots(scope);
  } else if (bot) {
    page.kind = 'bot';
    page.botId = decode(bot[1]);
    void showBot(scope, page, decode(bot[1]), bot[2]);
  } else if (/^\/bots\/([^/]+)\/?$/.test(path)) {
    location.replace(`#${path.replace(/\/?$/, '/settings')}`);
  } else {
    const run = path.match(/^\/invocations\/([^/]+)\/?$/);
    if (run) void showRun(scope, decode(run[1]));
    else showNotFound();
  }
}

/** Replaces the page content and moves focus to its main heading. */
function render(h1, ...content) {
  fill(main, h1, readOnlyNote(), content);
  focusEl(h1);
}

function readOnlyNote() {
  return READ_ONLY ? h('p', { class: 'note read-only-note' }, 'Read-only: changes are disabled.') : null;
}

function loading(title) {
  setTitle(title);
  fill(main, loadingEl());
}

function renderFailure(title, error, retry) {
  setTitle(title);
  render(
    heading(1, title),
    alertEl(errorText(error)),
    h(
      'p',
      {},
      retry ? h('button', { type: 'button', class: 'button', onclick: retry }, 'Try again') : null,
      ' ',
      h('a', { href: '#/' }, 'All bots'),
    ),
  );
}

function showNotFound() {
  setTitle('Page not found');
  render(heading(1, 'Page not found'), h('p', {}, 'There is no screen at this address. ', h('a', { href: '#/' }, 'Go to the bots.')));
}

// ---------------------------------------------------------------------------------------------------
// Bots

async function showBots(scope) {
  loading('Bots');
  let bots;
  try {
    bots = await api('GET', '/bots');
  } catch (error) {
    if (scope.alive) renderFailure('Bots', error, route);
    return;
  }
  if (!scope.alive) return;
  setTitle('Bots');
  if (!Array.isArray(bots) || bots.length === 0) {
    render(heading(1, 'Bots'), h('p', { class: 'empty' }, 'No bots are registered. Add a provider with @WebhookBot().'));
    return;
  }
  const t = dataTable('Bots', ['Bot', 'Owner account', 'Account balance (credits)', 'Triggers', 'Runs in the last 24 h']);
  for (const bot of bots) {
    t.tbody.append(
      t.row([
        h('a', { href: botHref(bot.id, 'settings') }, bot.name || bot.id),
        h('span', { class: 'mono' }, bot.accountId),
        bot.accountCredits === null || bot.accountCredits === undefined ? 'not opened yet' : num(bot.accountCredits),
        num(bot.triggers),
        bot.runsLast24h >= 10000 ? '10,000 or more' : num(bot.runsLast24h),
      ]),
    );
  }
  render(heading(1, 'Bots'), h('div', { class: 'table-wrap' }, t.table));
}

// ---------------------------------------------------------------------------------------------------
// Bot page: heading, tabs, owner account, and the Settings or History panel

const TABS = [
  ['settings', 'Settings'],
  ['history', 'History'],
];
const historyFilters = new Map(); // botId → filters, kept while the page is open

async function showBot(scope, pageState, botId, tab) {
  loading(tab === 'history' ? 'History' : 'Bot Triggers');
  let bot;
  try {
    bot = await api('GET', botPath(botId));
  } catch (error) {
    if (scope.alive) renderFailure(error instanceof ApiError && error.status === 404 ? 'Bot not found' : 'Bot', error, route);
    return;
  }
  if (!scope.alive) return;
  const name = bot.name || bot.id;

  const panelId = nextId('bot-panel');
  const tabs = TABS.map(([key, label]) =>
    h('a', { role: 'tab', id: `tab-${key}`, href: botHref(botId, key), 'aria-controls': panelId, 'data-tab': key }, label),
  );
  const tablist = h('div', { role: 'tablist', 'aria-label': `${name} pages`, class: 'tabs' }, tabs);
  tablist.addEventListener('keydown', (event) => {
    const index = tabs.indexOf(document.activeElement);
    if (index < 0) return;
    let next = -1;
    if (event.key === 'ArrowRight') next = (index + 1) % tabs.length;
    else if (event.key === 'ArrowLeft') next = (index - 1 + tabs.length) % tabs.length;
    else if (event.key === 'Home') next = 0;
    else if (event.key === 'End') next = tabs.length - 1;
    if (next < 0) return;
    event.preventDefault();
    tabs[next].focus();
    location.hash = tabs[next].getAttribute('href');
  });
  const panel = h('div', { role: 'tabpanel', id: panelId, class: 'tab-panel' });
  const h1 = heading(1, name);
  render(h1, h('p', { class: 'subtitle' }, 'Bot ', h('span', { class: 'mono' }, bot.id)), tablist, accountSection(bot), panel);

  let panelScope = null;
  scope.onEnd(() => panelScope && panelScope.end());
  const showTab = (key, first) => {
    if (panelScope) panelScope.end();
    panelScope = new Scope();
    const focusOnTab = tabs.includes(document.activeElement);
    for (const t of tabs) {
      const selected = t.dataset.tab === key;
      t.setAttribute('aria-selected', String(selected));
      t.setAttribute('tabindex', selected ? '0' : '-1');
      if (selected) panel.setAttribute('aria-labelledby', t.id);
    }
    if (focusOnTab) focusEl(tabs.find((t) => t.dataset.tab === key));
    const focusHeading = !first && !focusOnTab;
    if (key === 'history') {
      setTitle('History', name);
      renderHistory(panelScope, panel, bot, focusHeading);
    } else {
      setTitle('Bot Triggers', name);
      renderSettings(panelScope, panel, bot, focusHeading);
    }
  };
  pageState.showTab = (key) => showTab(key, false);
  showTab(tab, true);
}

function accountSection(bot) {
  const valueEl = h('dd', {}, bot.accountCredits === null || bot.accountCredits === undefined ? 'not opened yet' : num(bot.accountCredits));
  const section = h(
    'section',
    { class: 'account', 'aria-label': 'Owner account' },
    h(
      'dl',
      { class: 'facts inline' },
      h('div', {}, h('dt', {}, 'Owner account'), h('dd', { class: 'mono' }, bot.accountId)),
      h('div', {}, h('dt', {}, 'Account balance (credits)'), valueEl),
      typeof bot.creditsPerRun === 'number' ? h('div', {}, h('dt', {}, 'Credits per run'), h('dd', {}, num(bot.creditsPerRun))) : null,
    ),
  );
  if (READ_ONLY) return section;

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
  const status = h('p', { class: 'status-text', role: 'status' });
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
      const account = await api('PUT', `/accounts/${encodeURIComponent(bot.accountId)}/credits`, { credits });
      const value = account && typeof account.credits === 'number' ? account.credits : credits;
      valueEl.textContent = num(value);
      input.value = String(value);
      status.textContent = `Saved: the account has ${num(value)} credits.`;
    } catch (error) {
      errors.show(error);
    } finally {
      save.disabled = false;
    }
  });
  section.append(form, errors.el, status);
  return section;
}

// ---------------------------------------------------------------------------------------------------
// Settings tab: Bot Triggers

function renderSettings(scope, panel, bot, focusHeading) {
  const h2 = heading(2, 'Bot Triggers');
  const errors = errorSlot();
  const status = h('p', { class: 'status-text', role: 'status' });
  const listArea = h('div', { class: 'trigger-list' }, loadingEl());
  const viewArea = h('div', { class: 'trigger-view-area' });
  let triggers = [];
  let viewing = null; // id of the trigger shown in viewArea
  let viewScope = null; // lives while one trigger's view is shown (its callback and deliveries)
  scope.onEnd(() => viewScope && viewScope.end());

  const toolbar = h('div', { class: 'toolbar' });
  const addForm = READ_ONLY ? null : addTriggerForm();
  if (addForm) toolbar.append(addForm.button);
  fill(panel, h2, toolbar, addForm ? addForm.form : null, errors.el, status, listArea, viewArea);
  if (focusHeading) focusEl(h2);

  async function loadList() {
    try {
      const list = await api('GET', `${botPath(bot.id)}/triggers`);
      if (!scope.alive) return;
      triggers = Array.isArray(list) ? list : [];
      fill(listArea, triggerTable());
    } catch (error) {
      if (!scope.alive) return;
      fill(listArea, alertEl(errorText(error)));
    }
  }

  function triggerTable() {
    if (triggers.length === 0) return h('p', { class: 'empty' }, 'No triggers yet.');
    const t = dataTable(`Triggers of ${bot.name || bot.id}`, ['Name', 'Type', 'Created', 'Last used', 'Actions']);
    for (const trigger of triggers) {
      const name = trigger.name;
      const actions = h(
        'div',
        { class: 'row-actions' },
        h('button', { type: 'button', class: 'button small', 'aria-label': `View ${name}`, onclick: () => view(trigger) }, 'View'),
        READ_ONLY
          ? null
          : h(
              'button',
              { type: 'button', class: 'button small', 'aria-label': `Rotate key ${name}`, onclick: () => rotate(trigger) },
              'Rotate key',
            ),
        READ_ONLY
          ? null
          : h(
              'button',
              { type: 'button', class: 'button small danger-outline', 'aria-label': `Delete ${name}`, onclick: () => remove(trigger) },
              'Delete',
            ),
      );
      t.tbody.append(
        t.row([
          h('span', { class: 'trigger-name' }, name),
          trigger.type,
          time(trigger.createdAt),
          trigger.lastUsedAt ? time(trigger.lastUsedAt) : 'never',
          actions,
        ]),
      );
    }
    return h('div', { class: 'table-wrap' }, t.table);
  }

  function addTriggerForm() {
    const formId = nextId('add-trigger');
    const button = h(
      'button',
      { type: 'button', class: 'button primary', 'aria-expanded': 'false', 'aria-controls': formId },
      'Add Trigger',
    );
    const nameInput = h('input', {
      type: 'text',
      name: 'name',
      required: true,
      maxlength: '200',
      autocomplete: 'off',
      spellcheck: 'false',
    });
    const typeSelect = h('select', { name: 'type' }, h('option', { value: 'webhook' }, 'webhook'));
    const formErrors = errorSlot();
    const create = h('button', { type: 'submit', class: 'button primary' }, 'Create');
    const cancel = h('button', { type: 'button', class: 'button' }, 'Cancel');
    const formHeading = h('h3', {}, 'Add Trigger');
    formHeading.id = nextId('add-trigger-heading');
    const form = h(
      'form',
      { id: formId, class: 'card', hidden: true, novalidate: true, 'aria-labelledby': formHeading.id },
      formHeading,
      field('Name', nameInput, 'Any name; it is shown in the list and in History.').wrap,
      field('Type', typeSelect).wrap,
      formErrors.el,
      h('div', { class: 'actions' }, create, cancel),
    );
    const close = (focusButton) => {
      form.hidden = true;
      button.setAttribute('aria-expanded', 'false');
      formErrors.clear();
      nameInput.removeAttribute('aria-invalid');
      if (focusButton) focusEl(button);
    };
    button.addEventListener('click', () => {
      if (!form.hidden) {
        close(true);
        return;
      }
      form.hidden = false;
      button.setAttribute('aria-expanded', 'true');
      nameInput.value = '';
      nameInput.focus();
    });
    cancel.addEventListener('click', () => close(true));
    form.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        event.preventDefault();
        close(true);
      }
    });
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      formErrors.clear();
      const name = nameInput.value.trim();
      if (!name) {
        nameInput.setAttribute('aria-invalid', 'true');
        formErrors.show('Give the trigger a name.');
        nameInput.focus();
        return;
      }
      nameInput.removeAttribute('aria-invalid');
      create.disabled = true;
      try {
        const trigger = await api('POST', `${botPath(bot.id)}/triggers`, { name, type: typeSelect.value });
        if (!scope.alive) return;
        close(false);
        await loadList();
        status.textContent = `Created the trigger “${trigger.name}”.`;
        showView(trigger, 'Trigger created. Copy its key now and keep it secret.');
      } catch (error) {
        formErrors.show(error);
      } finally {
        create.disabled = false;
      }
    });
    return { button, form };
  }

  /** Ends what the shown view runs (its live deliveries) and empties it, or leaves it to `content`. */
  function clearView(...content) {
    if (viewScope) viewScope.end();
    viewScope = null;
    fill(viewArea, ...content);
  }

  async function view(trigger) {
    errors.clear();
    viewing = trigger.id;
    clearView(loadingEl());
    try {
      const full = await api('GET', triggerPath(trigger.id));
      if (!scope.alive || viewing !== trigger.id) return;
      showView(full);
    } catch (error) {
      if (!scope.alive || viewing !== trigger.id) return;
      fill(viewArea, alertEl(errorText(error)));
    }
  }

  async function rotate(trigger) {
    errors.clear();
    status.textContent = '';
    const ok = await confirmDialog(`Rotate the key of “${trigger.name}”? The old key stops working at once.`, 'Rotate key');
    if (!ok || !scope.alive) return;
    try {
      const rotated = await api('POST', `${triggerPath(trigger.id)}/rotate-key`);
      if (!scope.alive) return;
      status.textContent = `Rotated the key of “${trigger.name}”.`;
      showView(
        { ...trigger, ...rotated, name: trigger.name, type: trigger.type },
        'New key: the old key no longer works. Copy this one now.',
      );
    } catch (error) {
      errors.show(error);
    }
  }

  async function remove(trigger) {
    errors.clear();
    status.textContent = '';
    const ok = await confirmDialog(`Delete “${trigger.name}”? Its URL stops working; its runs stay in History.`, 'Delete');
    if (!ok || !scope.alive) return;
    try {
      await api('DELETE', triggerPath(trigger.id));
      if (!scope.alive) return;
      if (viewing === trigger.id) {
        viewing = null;
        clearView();
      }
      await loadList();
      status.textContent = `Deleted the trigger “${trigger.name}”.`;
      focusEl(h2);
    } catch (error) {
      errors.show(error);
    }
  }

  function showView(trigger, note) {
    viewing = trigger.id;
    clearView();
    viewScope = new Scope();
    fill(
      viewArea,
      triggerView(viewScope, { ...trigger, botId: trigger.botId || bot.id }, note, () => {
        viewing = null;
        clearView();
        focusEl(h2);
      }),
    );
    focusEl(viewArea.querySelector('h3'));
  }

  void loadList();
}

/** A read-only field with a button that copies its value; `statusEl` says whether it did. */
function copyField(labelText, control, buttonLabel, what, statusEl) {
  const button = h('button', { type: 'button', class: 'button small' }, buttonLabel);
  button.addEventListener('click', () => void copyFrom(control, statusEl, what));
  const { wrap } = field(labelText, control);
  wrap.classList.add('copy-field');
  wrap.append(button);
  return wrap;
}

function readonlyInput(value) {
  return h('input', { type: 'text', readonly: true, class: 'mono', value, spellcheck: 'false', autocomplete: 'off' });
}

function triggerView(scope, trigger, note, onClose) {
  const title = heading(3, `Trigger “${trigger.name}”`);
  title.id = nextId('trigger-view');
  const copyStatus = h('p', { class: 'status-text', role: 'status' });
  const hasKey = typeof trigger.key === 'string' && trigger.key !== '';
  const key = hasKey ? trigger.key : KEY_PLACEHOLDER;
  const url = trigger.url || '';

  const copyRow = (labelText, control, buttonLabel, what) => copyField(labelText, control, buttonLabel, what, copyStatus);
  const readonlyText = (value) => h('textarea', { readonly: true, class: 'mono', rows: '3', spellcheck: 'false', value });
  const deliveries = deliveriesSection(scope, {
    path: `${triggerPath(trigger.id)}/deliveries`,
    level: 4,
    caption: `Callback deliveries of “${trigger.name}”, newest first`,
    empty: 'No deliveries yet.',
    live: { botId: trigger.botId, triggerId: trigger.id },
  });

  const triggerCurl = `curl -X POST ${shellQuote(url)} -H ${shellQuote(`X-Key: ${key}`)} -H 'Content-Type: application/json' -d '{}'`;
  const waitCurl = `curl ${shellQuote(`${url}/invocation/<INVOCATION_ID>/sync`)} -H ${shellQuote(`X-Key: ${key}`)}`;

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
    copyRow('URL', readonlyInput(url), 'Copy URL', 'URL'),
    hasKey
      ? copyRow('Key', readonlyInput(key), 'Copy key', 'key')
      : h(
          'div',
          { class: 'field' },
          h('p', { class: 'label-like' }, 'Key'),
          h('p', { class: 'note' }, 'The key is shown only once, when the trigger is created or its key rotated.'),
        ),
    hasKey
      ? h('p', { class: 'hint' }, 'Keep the key secret: anyone with the URL and the key can start the bot and use up its credits.')
      : null,
    copyRow('Trigger with curl', readonlyText(triggerCurl), 'Copy trigger command', 'trigger command'),
    h(
      'p',
      { class: 'hint' },
      'It answers at once with ',
      h('code', {}, 'invocation.id'),
      '; put that id in place of ',
      h('code', {}, '<INVOCATION_ID>'),
      ' below.',
    ),
    copyRow('Wait for the outputs with curl', readonlyText(waitCurl), 'Copy wait command', 'wait command'),
    copyStatus,
    callbackSection(scope, trigger, deliveries),
    deliveries.el,
    h('div', { class: 'actions' }, h('button', { type: 'button', class: 'button', onclick: onClose }, 'Close')),
  );
}

// ---------------------------------------------------------------------------------------------------
// Trigger view: its signed callback and the delivery log (docs/callbacks.md)

const CALLBACK_EVENTS = [
  ['invocation.started', 'the run left the queue'],
  ['invocation.output', 'the bot emitted an output'],
  ['invocation.completed', 'the run ended'],
];
const COMPLETED = 'invocation.completed';
/** Re-reads of a delivery log while a delivery is due: the first after 1 s, then twice as long each time, up to 10 s. */
const POLL_MIN_MS = 1000;
const POLL_MAX_MS = 10_000;
/** A delivery due later than this (a retry hours away) is not waited for; Refresh shows it. */
const POLL_HORIZON_MS = 60_000;

/**
 * The trigger's Callback: its URL, events, state and secret, with Edit, Rotate secret and Remove; or, when it
 * has none, a form to set one. Read-only mode shows the callback without a way to change it. `deliveries` (the
 * log below) is told whether a callback is set, so it follows new runs live only then.
 */
function callbackSection(scope, trigger, deliveries) {
  const title = heading(4, 'Callback');
  title.id = nextId('callback');
  const body = h('div', {}, loadingEl());
  const status = h('p', { class: 'status-text', role: 'status' });
  const copyStatus = h('p', { class: 'status-text', role: 'status' });
  const errors = errorSlot();
  const path = `${triggerPath(trigger.id)}/callback`;
  let known = null; // the secret as last shown: without keySecret the API shows it only when set or rotated

  async function load() {
    try {
      // The trigger as GET …/triggers/:id answers carries its callback (null when none): no 404 to ask for.
      const full = 'callback' in trigger ? trigger : await api('GET', triggerPath(trigger.id));
      if (!scope.alive) return;
      if (full && full.callback) showSet(full.callback);
      else showNone();
    } catch (error) {
      if (scope.alive) fill(body, alertEl(errorText(error)));
    }
  }

  function showNone() {
    known = null;
    deliveries.watch(false);
    if (READ_ONLY) {
      fill(body, h('p', { class: 'muted' }, 'No callback: the runs of this trigger are not sent anywhere.'));
      return;
    }
    fill(
      body,
      h('p', { class: 'hint' }, 'Set a URL, and each run’s events are POSTed to it, signed with a secret (Standard Webhooks).'),
      callbackForm(null, null),
    );
  }

  function showSet(callback) {
    // Without keySecret a changed callback comes back without its secret: the one shown here still signs.
    if (typeof callback.secret === 'string' && callback.secret) known = callback.secret;
    deliveries.watch(callback.enabled);
    const state = callback.enabled ? 'Enabled' : `Disabled${callback.disabledReason ? `: ${callback.disabledReason}` : ''}`;
    const failures =
      callback.consecutiveFailures > 0
        ? h('p', { class: 'hint' }, `${num(callback.consecutiveFailures)} deliveries in a row used up their retries.`)
        : null;
    const facts = h(
      'dl',
      { class: 'facts' },
      h('div', {}, h('dt', {}, 'Callback URL'), h('dd', { class: 'mono' }, callback.url)),
      h(
        'div',
        {},
        h('dt', {}, 'Events'),
        h(
          'dd',
          {},
          (Array.isArray(callback.events) ? callback.events : []).map((event, i) => [i > 0 ? ', ' : null, h('code', {}, event)]),
        ),
      ),
      h('div', {}, h('dt', {}, 'State'), h('dd', { class: callback.enabled ? '' : 'error-text' }, state, failures)),
    );
    const secretEl = known
      ? [
          copyField('Secret', readonlyInput(known), 'Copy secret', 'secret', copyStatus),
          h(
            'p',
            { class: 'hint' },
            'Give the secret to the receiver: it checks each delivery’s ',
            h('code', {}, 'webhook-signature'),
            ' with it. Keep it secret.',
          ),
        ]
      : h(
          'div',
          { class: 'field' },
          h('p', { class: 'label-like' }, 'Secret'),
          h('p', { class: 'note' }, 'The secret is shown only when the callback is set or its secret rotated.'),
        );
    if (READ_ONLY) {
      fill(body, facts, secretEl, copyStatus);
      return;
    }
    const edit = h('button', { type: 'button', class: 'button', 'aria-expanded': 'false' }, 'Edit callback');
    const rotate = h('button', { type: 'button', class: 'button' }, 'Rotate secret');
    const remove = h('button', { type: 'button', class: 'button danger-outline' }, 'Remove callback');
    const form = callbackForm(callback, () => {
      form.hidden = true;
      edit.setAttribute('aria-expanded', 'false');
      focusEl(edit);
    });
    form.id = nextId('callback-form');
    form.hidden = true;
    edit.setAttribute('aria-controls', form.id);
    edit.addEventListener('click', () => {
      form.hidden = !form.hidden;
      edit.setAttribute('aria-expanded', String(!form.hidden));
      if (!form.hidden) focusEl(form.querySelector('input'));
    });
    rotate.addEventListener('click', () => void rotateSecret());
    remove.addEventListener('click', () => void removeCallback());
    const enableNote = callback.enabled
      ? null
      : h(
          'p',
          { class: 'note' },
          'No deliveries are made while the callback is disabled. ',
          h('button', { type: 'button', class: 'button small', onclick: () => void enable(callback) }, 'Enable callback'),
        );
    fill(body, facts, enableNote, secretEl, copyStatus, h('div', { class: 'actions' }, edit, rotate, remove), form);
  }

  /** The form that sets the callback (`current` null) or changes it; `onCancel` adds a Cancel button. */
  function callbackForm(current, onCancel) {
    const urlInput = h('input', {
      type: 'url',
      name: 'url',
      class: 'mono',
      required: true,
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: 'https://receiver.example.com/runs',
      value: current ? current.url : '',
    });
    const urlField = field(
      'Callback URL',
      urlInput,
      'Each event is POSTed here. Only public addresses are called, unless the host is in callbackAllowedHosts.',
    );
    const errorEl = h('div', { id: `${urlInput.id}-error`, class: 'field-error' });
    urlInput.setAttribute('aria-describedby', `${urlInput.getAttribute('aria-describedby')} ${errorEl.id}`);
    urlField.wrap.append(errorEl);
    const chosen = new Set(current && Array.isArray(current.events) ? current.events : [COMPLETED]);
    const completedNote = h(
      'p',
      { class: 'hint', id: nextId('completed-note') },
      'invocation.completed is always sent: it carries the run’s result.',
    );
    const boxes = CALLBACK_EVENTS.map(([event, what]) => {
      const box = h('input', {
        type: 'checkbox',
        name: 'events',
        value: event,
        checked: event === COMPLETED || chosen.has(event),
        disabled: event === COMPLETED,
        'aria-describedby': event === COMPLETED ? completedNote.id : null,
      });
      box.id = nextId('event');
      return { event, box, el: h('div', { class: 'check' }, box, h('label', { for: box.id }, h('code', {}, event), ` — ${what}`)) };
    });
    const formErrors = errorSlot();
    const submit = h('button', { type: 'submit', class: 'button primary' }, 'Save callback');
    const form = h(
      'form',
      { class: 'callback-form', novalidate: true, 'aria-label': current ? 'Edit the callback' : 'Set a callback' },
      urlField.wrap,
      h(
        'fieldset',
        { class: 'events' },
        h('legend', {}, 'Events'),
        boxes.map((b) => b.el),
        completedNote,
      ),
      formErrors.el,
      h(
        'div',
        { class: 'actions' },
        submit,
        onCancel ? h('button', { type: 'button', class: 'button', onclick: onCancel }, 'Cancel') : null,
      ),
    );
    const showError = (text) => {
      urlInput.setAttribute('aria-invalid', 'true');
      fill(errorEl, alertEl(text));
    };
    if (onCancel) {
      form.addEventListener('keydown', (event) => {
        if (event.key === 'Escape') {
          event.preventDefault();
          onCancel();
        }
      });
    }
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      errorEl.replaceChildren();
      formErrors.clear();
      urlInput.removeAttribute('aria-invalid');
      const url = urlInput.value.trim();
      if (!url) {
        showError('Enter the URL the events are sent to.');
        urlInput.focus();
        return;
      }
      const events = boxes.filter((b) => b.box.checked).map((b) => b.event);
      submit.disabled = true;
      const problem = await save(url, events, current ? 'Saved the callback.' : 'Set the callback. Give its secret to the receiver.');
      if (!scope.alive || !problem) return;
      submit.disabled = false;
      // A refused URL (the SSRF rules) or a bad event is the form's to fix; anything else is said below it.
      if (problem instanceof ApiError && problem.status === 400) {
        showError(errorText(problem));
        urlInput.focus();
      } else {
        formErrors.show(problem);
      }
    });
    return form;
  }

  /** PUTs the callback; on success shows it and says `done`, otherwise returns the error (null when done). */
  async function save(url, events, done) {
    errors.clear();
    status.textContent = '';
    try {
      const saved = await api('PUT', path, { url, events });
      if (!scope.alive) return null;
      showSet(saved);
      status.textContent = done;
      focusEl(title);
      return null;
    } catch (error) {
      return error;
    }
  }

  /** Setting a disabled callback again enables it, its failures forgotten. */
  async function enable(callback) {
    const problem = await save(callback.url, callback.events, 'Enabled the callback again.');
    if (problem && scope.alive) errors.show(problem);
  }

  async function rotateSecret() {
    errors.clear();
    status.textContent = '';
    const ok = await confirmDialog(
      `Rotate the callback secret of “${trigger.name}”? Deliveries from now on are signed with the new secret only.`,
      'Rotate secret',
    );
    if (!ok || !scope.alive) return;
    try {
      const rotated = await api('POST', `${path}/rotate-secret`);
      if (!scope.alive) return;
      showSet(rotated);
      status.textContent = 'Rotated the secret: give the new one to the receiver.';
      focusEl(title);
    } catch (error) {
      if (scope.alive) errors.show(error);
    }
  }

  async function removeCallback() {
    errors.clear();
    status.textContent = '';
    const ok = await confirmDialog(
      `Remove the callback of “${trigger.name}”? Its runs are no longer sent, and pending deliveries are dropped.`,
      'Remove callback',
    );
    if (!ok || !scope.alive) return;
    try {
      await api('DELETE', path);
      if (!scope.alive) return;
      showNone();
      status.textContent = 'Removed the callback.';
      focusEl(title);
    } catch (error) {
      if (scope.alive) errors.show(error);
    }
  }

  void load();
  return h('section', { class: 'subsection', 'aria-labelledby': title.id }, title, errors.el, status, body);
}

/**
 * A delivery log: the deliveries at `path`, each with Redeliver (not in read-only mode). No event announces a
 * delivery's attempt, so the log is re-read when asked (`refresh`, the Refresh button, a run of the trigger
 * changing state while `watch(true)`), and then by itself while a delivery is due within a minute.
 */
function deliveriesSection(scope, { path, level, caption, empty, live }) {
  const title = heading(level, 'Deliveries');
  title.id = nextId('deliveries');
  const withInvocation = Boolean(live);
  const columns = [
    'Event',
    withInvocation ? 'Invocation' : null,
    'Status',
    'Attempts',
    'Response',
    'Latency',
    'Last attempt',
    'Next attempt',
    READ_ONLY ? null : 'Actions',
  ].filter(Boolean);
  const liveEl = live ? liveRegion() : null;
  const status = h('p', { class: 'status-text', role: 'status' });
  const errors = errorSlot();
  const listArea = h('div', { class: 'deliveries' }, loadingEl());
  const refreshButton = h('button', { type: 'button', class: 'button small', onclick: () => refresh() }, 'Refresh');
  let seq = 0;
  let timer = null;
  let pollDelay = POLL_MIN_MS;
  let closeLive = null;
  let soon = null;
  let shown = null; // the list as last drawn (JSON)
  let refocus = null; // a selector to focus in the next drawing

  const stopTimer = () => {
    if (timer) clearTimeout(timer);
    timer = null;
  };
  scope.onEnd(() => {
    stopTimer();
    if (soon) clearTimeout(soon);
  });

  async function load() {
    const n = ++seq;
    stopTimer();
    let list;
    try {
      list = await api('GET', path);
    } catch (error) {
      if (!scope.alive || n !== seq) return;
      shown = null;
      fill(listArea, alertEl(errorText(error)));
      return;
    }
    if (!scope.alive || n !== seq) return;
    list = Array.isArray(list) ? list : [];
    show(list);
    schedule(list);
  }

  function show(list) {
    const drawn = JSON.stringify(list);
    if (drawn === shown) return; // a re-read that found nothing new leaves the table (and focus) alone
    shown = drawn;
    if (list.length === 0) {
      fill(listArea, h('p', { class: 'empty' }, empty));
      return;
    }
    // Focus on a row's link or Redeliver button (or on the one just pressed) survives the table being drawn again.
    const active = document.activeElement;
    const focused =
      active && listArea.contains(active) && active.dataset.deliveryId
        ? `${active.tagName.toLowerCase()}[data-delivery-id="${CSS.escape(active.dataset.deliveryId)}"]`
        : refocus;
    refocus = null;
    const t = dataTable(caption, columns);
    for (const d of list) {
      const cells = [
        h('code', {}, d.event),
        ...(withInvocation ? [h('a', { href: runHref(d.invocationId), class: 'mono', 'data-delivery-id': d.id }, d.invocationId)] : []),
        badge(d.status),
        num(d.attempts),
        responseCell(d),
        duration(d.latencyMs),
        time(d.lastAttemptAt),
        d.status === 'pending' ? time(d.nextAttemptAt) : '—',
      ];
      if (!READ_ONLY) {
        const button = h(
          'button',
          { type: 'button', class: 'button small', 'aria-label': `Redeliver ${d.event} of ${d.invocationId}`, 'data-delivery-id': d.id },
          'Redeliver',
        );
        button.addEventListener('click', () => void redeliver(d, button));
        cells.push(button);
      }
      const tr = t.row(cells);
      tr.dataset.deliveryId = d.id;
      t.tbody.append(tr);
    }
    fill(listArea, h('div', { class: 'table-wrap' }, t.table));
    if (focused) focusEl(listArea.querySelector(focused) || title);
  }

  /** While a delivery is pending and due within a minute, reads the log again after it is due. */
  function schedule(list) {
    const pending = list.filter((d) => d.status === 'pending');
    if (pending.length === 0) {
      pollDelay = POLL_MIN_MS;
      return;
    }
    const now = Date.now();
    const due = Math.min(...pending.map((d) => (d.nextAttemptAt ? Date.parse(d.nextAttemptAt) - now : 0)));
    if (!(due <= POLL_HORIZON_MS)) return;
    const delay = Math.max(due + 500, pollDelay);
    pollDelay = Math.min(pollDelay * 2, POLL_MAX_MS);
    timer = setTimeout(() => void load(), delay);
  }

  function refresh() {
    pollDelay = POLL_MIN_MS;
    return load();
  }

  /** A run changed state: its deliveries are stored with the change (or just after it), so read them shortly. */
  function refreshSoon() {
    if (soon) clearTimeout(soon);
    soon = setTimeout(() => {
      soon = null;
      void refresh();
    }, 300);
  }

  async function redeliver(d, button) {
    errors.clear();
    status.textContent = '';
    // A disabled button loses focus: the redrawn table gives it back to this row's button.
    if (document.activeElement === button) refocus = `button[data-delivery-id="${CSS.escape(d.id)}"]`;
    button.disabled = true;
    try {
      await api('POST', `/deliveries/${encodeURIComponent(d.id)}/redeliver`);
      if (!scope.alive) return;
      status.textContent = `Redelivering ${d.event} of ${d.invocationId}: it is sent again at once.`;
      await refresh();
      // Still there: the log was not drawn again (unchanged, or its read failed).
      if (scope.alive && button.isConnected) {
        refocus = null;
        button.disabled = false;
        if (document.activeElement === document.body) focusEl(button);
      }
    } catch (error) {
      if (!scope.alive) return;
      refocus = null;
      button.disabled = false;
      errors.show(error);
      if (document.activeElement === document.body) focusEl(button);
    }
  }

  /** Follows the trigger's runs on the bot's event stream (only while it has a callback: nothing else delivers). */
  function watch(on) {
    if (!live || Boolean(closeLive) === on) return;
    if (on) {
      closeLive = openLive(
        scope,
        live.botId,
        liveEl,
        (event) => {
          if (!event.triggerId || event.triggerId === live.triggerId) refreshSoon();
        },
        () => void refresh(),
      );
    } else {
      closeLive();
      closeLive = null;
      liveEl.textContent = '';
      liveEl.dataset.state = 'off';
    }
  }

  void load();
  const el = h(
    'section',
    { class: level > 2 ? 'subsection' : null, 'aria-labelledby': title.id },
    h('div', { class: 'heading-row' }, title, liveEl, refreshButton),
    errors.el,
    status,
    listArea,
  );
  return { el, refresh, watch };
}

function responseCell(d) {
  const code = typeof d.responseStatus === 'number' ? String(d.responseStatus) : '—';
  if (!d.error) return code;
  return h('div', {}, h('span', {}, code), h('span', { class: 'delivery-error error-text' }, d.error));
}

// ---------------------------------------------------------------------------------------------------
// History tab

function emptyFilters() {
  return { status: '', triggerId: '', from: '', to: '', q: '' };
}

function isFiltered(f) {
  return Boolean(f.status || f.triggerId || f.from || f.to || f.q);
}

function toIso(local) {
  if (!local) return null;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

function resultCell(run) {
  if (run.outputsTruncated) return h('span', { class: 'result-line muted' }, 'outputs too long to list — open the run');
  if (run.error) {
    const message = errorMessage(run.error);
    return h('span', { class: 'result-line error-text', title: message }, message);
  }
  if (Array.isArray(run.outputs) && run.outputs.length > 0) {
    const lines = run.outputs.slice(0, MAX_RESULT_LINES).map((o) => {
      const line = `${o && o.title}: ${o && o.message}`;
      return h('span', { class: 'result-line', title: line }, line);
    });
    const rest = run.outputs.length - MAX_RESULT_LINES;
    return h(
      'div',
      { class: 'result' },
      lines,
      rest > 0 ? h('span', { class: 'result-line muted' }, `and ${rest} more — open the run`) : null,
    );
  }
  return ACTIVE.has(run.status) ? '—' : h('span', { class: 'muted' }, 'no outputs');
}

function errorMessage(error) {
  if (!error) return '';
  if (typeof error === 'string') return error;
  return error.message || error.code || JSON.stringify(error);
}

function runCells(run) {
  return [
    badge(run.status),
    run.triggerName || h('span', { class: 'mono' }, run.triggerId || '—'),
    time(run.createdAt),
    duration(run.durationMs),
    num(run.credits),
    resultCell(run),
  ];
}

/** Whether a row would show the same thing for both (a list item and a detail differ in other fields). */
function sameRun(a, b) {
  const shown = (r) =>
    JSON.stringify([r.status, r.triggerName, r.triggerId, r.createdAt, r.durationMs, r.credits, r.outputs, r.outputsTruncated, r.error]);
  return shown(a) === shown(b);
}

const HISTORY_COLUMNS = ['Invocation', 'Status', 'Trigger', 'Started', 'Duration', 'Credits', 'Result'];

function renderHistory(scope, panel, bot, focusHeading) {
  const botId = bot.id;
  const filters = { ...(historyFilters.get(botId) || emptyFilters()) };
  const h2 = heading(2, 'History');
  const live = liveRegion();
  const errors = errorSlot();

  // Filters
  const statusSelect = h(
    'select',
    { name: 'status' },
    h('option', { value: '' }, 'All'),
    STATUSES.map((s) => h('option', { value: s }, s)),
  );
  const triggerSelect = h('select', { name: 'triggerId' }, h('option', { value: '' }, 'All'));
  const fromInput = h('input', { type: 'datetime-local', name: 'from', step: '1' });
  const toInput = h('input', { type: 'datetime-local', name: 'to', step: '1' });
  const searchInput = h('input', {
    type: 'search',
    name: 'q',
    placeholder: 'invocation id or idempotency key',
    autocomplete: 'off',
    spellcheck: 'false',
  });
  const searchField = field('Search', searchInput).wrap;
  searchField.classList.add('grow');
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Filter runs', novalidate: true },
    field('Status', statusSelect).wrap,
    field('Trigger', triggerSelect).wrap,
    field('From', fromInput).wrap,
    field('To', toInput).wrap,
    searchField,
    h(
      'div',
      { class: 'actions filter-actions' },
      h('button', { type: 'submit', class: 'button primary' }, 'Apply'),
      h('button', { type: 'button', class: 'button', onclick: clear }, 'Clear'),
    ),
  );
  const setFields = () => {
    statusSelect.value = filters.status;
    triggerSelect.value = filters.triggerId;
    fromInput.value = filters.from;
    toInput.value = filters.to;
    searchInput.value = filters.q;
  };
  setFields();
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    Object.assign(filters, {
      status: statusSelect.value,
      triggerId: triggerSelect.value,
      from: fromInput.value,
      to: toInput.value,
      q: searchInput.value.trim(),
    });
    historyFilters.set(botId, { ...filters });
    void load(true);
  });
  function clear() {
    Object.assign(filters, emptyFilters());
    historyFilters.delete(botId);
    setFields();
    void load(true);
  }

  // Table
  const t = dataTable(`Runs of ${bot.name || botId}, newest first`, HISTORY_COLUMNS);
  const tableWrap = h('div', { class: 'table-wrap', hidden: true }, t.table);
  const emptyEl = h('p', { class: 'empty', hidden: true });
  const listStatus = h('div', {}, loadingEl());
  const more = h('button', { type: 'button', class: 'button', hidden: true }, 'Load more');
  const rows = new Map(); // run id → { tr, run }
  const fetchSeq = new Map(); // run id → number of the latest fetch, so an older answer never wins
  let cursor = null;
  let loadSeq = 0;

  fill(
    panel,
    h('div', { class: 'heading-row' }, h2, live),
    form,
    errors.el,
    listStatus,
    emptyEl,
    tableWrap,
    h('div', { class: 'actions' }, more),
  );
  if (focusHeading) focusEl(h2);

  more.addEventListener('click', async () => {
    const firstNew = rows.size;
    await load(false);
    // Keyboard users continue at the first run just loaded (the button may be gone now).
    const link = t.tbody.children[firstNew] && t.tbody.children[firstNew].querySelector('a');
    if (link && (document.activeElement === more || document.activeElement === document.body)) link.focus();
  });

  function query(before) {
    const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (filters.status) params.set('status', filters.status);
    if (filters.triggerId) params.set('triggerId', filters.triggerId);
    const from = toIso(filters.from);
    const to = toIso(filters.to);
    if (from) params.set('from', from);
    if (to) params.set('to', to);
    if (filters.q) params.set('q', filters.q);
    if (before) params.set('before', before);
    return `${botPath(botId)}/invocations?${params}`;
  }

  function updateEmpty() {
    const none = rows.size === 0;
    tableWrap.hidden = none;
    emptyEl.hidden = !none;
    emptyEl.textContent = isFiltered(filters) ? 'No runs match these filters.' : 'No runs yet.';
  }

  function rowFor(run) {
    const tr = t.row([h('a', { href: runHref(run.id), class: 'mono' }, run.id), ...runCells(run)]);
    tr.dataset.runId = run.id;
    return tr;
  }

  function updateRow(run) {
    const entry = rows.get(run.id);
    if (!entry || sameRun(entry.run, run)) return;
    entry.run = run;
    // Keep the first cell (the link) so focus on it survives the update.
    const cells = t.cells(['', ...runCells(run)]).slice(1);
    const tds = entry.tr.querySelectorAll('td');
    cells.forEach((cell, i) => tds[i + 1].replaceWith(cell));
    entry.tr.classList.remove('updated');
    void entry.tr.offsetWidth; // restart the highlight animation
    entry.tr.classList.add('updated');
  }

  async function load(reset) {
    const seq = ++loadSeq;
    errors.clear();
    more.disabled = true;
    if (reset) {
      fill(listStatus, loadingEl());
      cursor = null;
    }
    let runs;
    try {
      runs = await api('GET', query(reset ? null : cursor));
    } catch (error) {
      if (!scope.alive || seq !== loadSeq) return;
      listStatus.replaceChildren();
      errors.show(error);
      more.disabled = false;
      return;
    }
    if (!scope.alive || seq !== loadSeq) return;
    listStatus.replaceChildren();
    if (reset) {
      rows.clear();
      t.tbody.replaceChildren();
    }
    runs = Array.isArray(runs) ? runs : [];
    for (const run of runs) {
      if (rows.has(run.id)) continue;
      const tr = rowFor(run);
      rows.set(run.id, { tr, run });
      t.tbody.append(tr);
    }
    if (runs.length > 0) cursor = runs[runs.length - 1].id;
    more.hidden = runs.length < PAGE_SIZE;
    more.disabled = false;
    updateEmpty();
  }

  async function fetchRun(id) {
    const n = (fetchSeq.get(id) || 0) + 1;
    fetchSeq.set(id, n);
    const run = await api('GET', runPath(id));
    return scope.alive && fetchSeq.get(id) === n ? run : null;
  }

  function newestCreatedAt() {
    const first = t.tbody.firstElementChild;
    const entry = first && rows.get(first.dataset.runId);
    return entry ? Date.parse(entry.run.createdAt) : -Infinity;
  }

  function insertAtTop(run) {
    if (rows.has(run.id)) {
      updateRow(run);
      return;
    }
    // A run older than the newest shown is not new (e.g. an old run off this page changing state).
    if (Date.parse(run.createdAt) < newestCreatedAt()) return;
    const tr = rowFor(run);
    rows.set(run.id, { tr, run });
    t.tbody.prepend(tr);
    tr.classList.add('updated');
    updateEmpty();
  }

  async function onInvocation(event) {
    const id = event.invocationId;
    if (!rows.has(id) && isFiltered(filters)) return;
    try {
      const run = await fetchRun(id);
      if (!run) return;
      if (rows.has(id)) updateRow(run);
      else if (!isFiltered(filters)) insertAtTop(run);
    } catch {
      // The row stays as it was; the next event for this run fetches it again.
    }
  }

  // When the stream (re)opens: pick up what changed before it, without losing the rows already shown.
  async function catchUp() {
    try {
      const seq = loadSeq;
      const runs = await api('GET', query(null));
      if (!scope.alive || seq !== loadSeq || !Array.isArray(runs)) return;
      const fresh = [];
      for (const run of runs) {
        if (rows.has(run.id)) updateRow(run);
        else fresh.push(run);
      }
      for (const run of fresh.reverse()) insertAtTop(run);
      const seen = new Set(runs.map((r) => r.id));
      for (const [id, entry] of rows) {
        if (!seen.has(id) && ACTIVE.has(entry.run.status)) void onInvocation({ invocationId: id });
      }
    } catch {
      // Shown rows stay; the next events update them.
    }
  }

  // The trigger select lists the bot's triggers (deleted ones are not listed; their runs show the id).
  api('GET', `${botPath(botId)}/triggers`)
    .then((list) => {
      if (!scope.alive || !Array.isArray(list)) return;
      for (const trigger of list) triggerSelect.append(h('option', { value: trigger.id }, trigger.name));
      triggerSelect.value = filters.triggerId;
      if (filters.triggerId && triggerSelect.value !== filters.triggerId) {
        triggerSelect.append(h('option', { value: filters.triggerId }, filters.triggerId));
        triggerSelect.value = filters.triggerId;
      }
    })
    .catch(() => {
      // The filter still works with "All"; the list's own errors show in the table area.
    });

  void load(true);
  openLive(
    scope,
    botId,
    live,
    (event) => void onInvocation(event),
    () => void catchUp(),
  );
}

// ---------------------------------------------------------------------------------------------------
// Run detail

async function showRun(scope, id) {
  loading(`Run ${id}`);
  let run;
  try {
    run = await api('GET', runPath(id));
  } catch (error) {
    if (scope.alive) renderFailure(error instanceof ApiError && error.status === 404 ? 'Run not found' : `Run ${id}`, error, route);
    return;
  }
  if (!scope.alive) return;
  let botName = run.botId;
  try {
    const bot = await api('GET', botPath(run.botId));
    if (bot && bot.name) botName = bot.name;
  } catch {
    // The bot's id does as its name.
  }
  if (!scope.alive) return;
  setTitle(`Run ${run.id}`, botName);

  const h1 = heading(1, `Run ${run.id}`, { class: 'mono-heading' });
  const back = h('p', { class: 'back' }, h('a', { href: botHref(run.botId, 'history') }, `Back to the History of ${botName}`));
  const live = liveRegion();
  const summary = h('div', { class: 'run-summary' });
  const actionErrors = errorSlot();
  const actionStatus = h('p', { class: 'status-text', role: 'status' });
  let current = run;
  let closeLive = null;
  const deliveries = deliveriesSection(scope, {
    path: `${runPath(id)}/deliveries`,
    level: 2,
    caption: `Callback deliveries of run ${run.id}, oldest first`,
    empty: 'No deliveries for this run.',
  });

  const fetchSeq = { n: 0 };
  async function refresh() {
    const n = ++fetchSeq.n;
    try {
      const fresh = await api('GET', runPath(id));
      if (!scope.alive || n !== fetchSeq.n) return;
      update(fresh);
    } catch {
      // Kept as shown; the next event fetches again.
    }
  }

  function update(fresh) {
    const hadFocus = summary.contains(document.activeElement);
    // A change of state may come with a delivery (started, completed): the log is read again.
    if (fresh.status !== current.status) void deliveries.refresh();
    current = fresh;
    fill(summary, ...runSummary(fresh, cancelButton(fresh)));
    if (hadFocus) focusEl(h1);
    if (!ACTIVE.has(fresh.status) && closeLive) {
      closeLive();
      closeLive = null;
      live.textContent = `Finished: ${fresh.status}.`;
      live.dataset.state = 'off';
    }
  }

  function cancelButton(r) {
    if (READ_ONLY || !ACTIVE.has(r.status)) return null;
    const button = h('button', { type: 'button', class: 'button danger' }, 'Cancel run');
    button.addEventListener('click', async () => {
      actionErrors.clear();
      actionStatus.textContent = '';
      const ok = await confirmDialog('Cancel this run?', 'Cancel run');
      if (!ok || !scope.alive) return;
      button.disabled = true;
      try {
        const cancelled = await api('POST', `${runPath(id)}/cancel`);
        if (!scope.alive) return;
        fetchSeq.n += 1; // an answer still on its way is older than this one
        update(cancelled && cancelled.id ? cancelled : current);
        actionStatus.textContent = 'Cancel requested.';
        if (!cancelled || !cancelled.id) void refresh();
        focusEl(h1);
      } catch (error) {
        button.disabled = false;
        actionErrors.show(error);
        if (error instanceof ApiError && error.status === 409) void refresh();
      }
    });
    return h('div', { class: 'actions' }, button);
  }

  fill(summary, ...runSummary(run, cancelButton(run)));
  render(
    h1,
    back,
    h('div', { class: 'run-live' }, live),
    actionErrors.el,
    actionStatus,
    summary,
    deliveries.el,
    READ_ONLY ? null : replaySection(scope, run),
  );

  if (ACTIVE.has(run.status)) {
    closeLive = openLive(
      scope,
      run.botId,
      live,
      (event) => {
        if (event.invocationId === id) void refresh();
      },
      () => void refresh(),
    );
  }
}

function runSummary(run, cancel) {
  const trigger = run.trigger || { id: run.triggerId, name: run.triggerName, deleted: false };
  const triggerName = trigger.name || trigger.id || run.triggerId || '—';
  const facts = h(
    'dl',
    { class: 'facts' },
    h('div', {}, h('dt', {}, 'Status'), h('dd', {}, badge(run.status))),
    h('div', {}, h('dt', {}, 'Trigger'), h('dd', {}, triggerName, trigger.deleted ? ' (deleted)' : null)),
    h('div', {}, h('dt', {}, 'Credits charged'), h('dd', {}, num(run.credits))),
    h('div', {}, h('dt', {}, 'Idempotency key'), h('dd', { class: run.idempotencyKey ? 'mono' : 'muted' }, run.idempotencyKey || 'none')),
    run.accountId ? h('div', {}, h('dt', {}, 'Account'), h('dd', { class: 'mono' }, run.accountId)) : null,
  );

  const timeline = Array.isArray(run.timeline) && run.timeline.length > 0 ? run.timeline : defaultTimeline(run);
  const timelineList = h(
    'ol',
    { class: 'timeline' },
    timeline.filter((step) => step && step.at).map((step) => h('li', {}, badge(step.status), ' at ', time(step.at))),
  );
  const durationText =
    typeof run.durationMs === 'number' ? `Duration: ${duration(run.durationMs)}` : ACTIVE.has(run.status) ? 'Not finished yet.' : null;

  let inputs;
  if (run.inputsHidden)
    inputs = h(
      'p',
      { class: 'muted' },
      'The inputs of runs are not shown in these screens (a setting of this admin). A replay still sends them.',
    );
  else if (run.inputs === undefined || run.inputs === null) inputs = h('p', { class: 'muted' }, 'No inputs.');
  else inputs = h('pre', { class: 'code', tabindex: '0', 'aria-label': 'Inputs as JSON' }, JSON.stringify(run.inputs, null, 2));

  let outputs;
  if (Array.isArray(run.outputs) && run.outputs.length > 0) {
    outputs = h(
      'dl',
      { class: 'outputs' },
      run.outputs.map((o) => h('div', { class: 'output' }, h('dt', {}, String(o && o.title)), h('dd', {}, String(o && o.message)))),
    );
  } else if (run.outputsTruncated) {
    outputs = h('p', { class: 'muted' }, 'The outputs are too long to list here.');
  } else {
    outputs = h('p', { class: 'muted' }, ACTIVE.has(run.status) ? 'No outputs yet.' : 'No outputs.');
  }

  const parts = [
    facts,
    cancel,
    h(
      'section',
      { 'aria-labelledby': 'timeline-h' },
      h('h2', { id: 'timeline-h' }, 'Timeline'),
      timelineList,
      durationText ? h('p', {}, durationText) : null,
    ),
    h('section', { 'aria-labelledby': 'inputs-h' }, h('h2', { id: 'inputs-h' }, 'Inputs'), inputs),
    h('section', { 'aria-labelledby': 'outputs-h' }, h('h2', { id: 'outputs-h' }, 'Outputs'), outputs),
  ];
  if (run.error) {
    const message = errorMessage(run.error);
    const code = typeof run.error === 'object' ? run.error.code : null;
    parts.push(
      h(
        'section',
        { 'aria-labelledby': 'error-h', class: 'run-error' },
        h('h2', { id: 'error-h' }, 'Error'),
        h(
          'dl',
          { class: 'facts' },
          h('div', {}, h('dt', {}, 'Message'), h('dd', { class: 'pre-wrap' }, message)),
          code ? h('div', {}, h('dt', {}, 'Code'), h('dd', { class: 'mono' }, code)) : null,
        ),
      ),
    );
  }
  return parts;
}

function defaultTimeline(run) {
  const steps = [{ status: 'queued', at: run.createdAt }];
  if (run.startedAt) steps.push({ status: 'running', at: run.startedAt });
  if (run.finishedAt) steps.push({ status: run.status, at: run.finishedAt });
  return steps;
}

function replaySection(scope, run) {
  const headingEl = h('h2', { id: 'replay-h' }, 'Replay');
  if (run.trigger && run.trigger.deleted) {
    return h(
      'section',
      { 'aria-labelledby': 'replay-h' },
      headingEl,
      h('p', { class: 'muted' }, 'Its trigger was deleted, so this run cannot be replayed.'),
    );
  }
  const shown = !run.inputsHidden && run.inputs !== undefined && run.inputs !== null;
  const initial = shown ? JSON.stringify(run.inputs, null, 2) : run.inputsHidden ? '' : '{}';
  const textarea = h('textarea', { class: 'mono', rows: '8', spellcheck: 'false', autocomplete: 'off', value: initial });
  textarea.id = 'replay-inputs';
  const errorId = 'replay-inputs-error';
  const errorEl = h('div', { id: errorId, class: 'field-error' });
  const hint = run.inputsHidden
    ? 'Starts a new run through the same trigger, charged as a new run. “Replay” sends this run’s own inputs, unchanged (they are not shown here). To send other inputs, write them here and choose “Replay with these inputs”.'
    : 'Starts a new run through the same trigger with these inputs, charged as a new run.';
  const fieldWrap = field(run.inputsHidden ? 'Other inputs (JSON, optional)' : 'Inputs (JSON)', textarea, hint).wrap;
  textarea.setAttribute('aria-describedby', `${textarea.getAttribute('aria-describedby')} ${errorId}`);
  fieldWrap.append(errorEl);
  // With hidden inputs the primary action replays the run's own inputs; the form's submit sends what was written.
  const submit = h(
    'button',
    { type: 'submit', class: run.inputsHidden ? 'button' : 'button primary' },
    run.inputsHidden ? 'Replay with these inputs' : 'Replay',
  );
  const actions = h('div', { class: 'actions' }, submit);
  const form = h('form', { class: 'replay', novalidate: true, 'aria-labelledby': 'replay-h' }, fieldWrap, actions);
  const showError = (text) => {
    textarea.setAttribute('aria-invalid', 'true');
    fill(errorEl, alertEl(text));
  };
  /** Sends the replay; `body` without `inputs` replays the run's own inputs (the server still has them). */
  const replay = async (body) => {
    submit.disabled = true;
    try {
      const created = await api('POST', `${runPath(run.id)}/replay`, body);
      if (!scope.alive) return;
      location.hash = runHref(created.id);
    } catch (error) {
      if (!scope.alive) return;
      showError(errorText(error));
      submit.disabled = false;
    }
  };
  if (run.inputsHidden) {
    const same = h('button', { type: 'button', class: 'button primary' }, 'Replay');
    same.addEventListener('click', () => {
      errorEl.replaceChildren();
      textarea.removeAttribute('aria-invalid');
      void replay({});
    });
    actions.prepend(same);
  }
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    errorEl.replaceChildren();
    textarea.removeAttribute('aria-invalid');
    if (run.inputsHidden && textarea.value.trim() === '') {
      showError('Write the inputs to send first, or choose “Replay” to send the run’s own.');
      textarea.focus();
      return;
    }
    let inputs;
    try {
      inputs = JSON.parse(textarea.value);
    } catch (error) {
      showError(`The inputs are not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
      textarea.focus();
      return;
    }
    if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) {
      showError('The inputs must be a JSON object, such as {} or {"name": "value"}.');
      textarea.focus();
      return;
    }
    await replay({ inputs });
  });
  return h('section', { 'aria-labelledby': 'replay-h', class: 'card' }, headingEl, form);
}

// ---------------------------------------------------------------------------------------------------

/** With the host's sign-out path (the admin's `signOutPath`), a Sign out button in the header: a form POST to it. */
function addSignOut() {
  const path = root.dataset.signOutPath;
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
