import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CALLBACK_EVENTS, INVOCATION_STATUSES, TERMINAL_STATUSES } from '../persistence/records.js';
import type { AdminPageConfig } from './admin-api-answers.js';
import { HISTORY_PAGE_SIZE, RECENT_RUNS_CAP } from './admin-views.js';
import { AUDIT_ACTIONS, AUDIT_PAGE_SIZE } from './audit/audit-views.js';

/** The screens' files, shipped in the package's `admin-ui/` folder and read once at startup. */
export interface AdminScreenFiles {
  /** index.html with `{{base}}`, `{{readOnly}}`, `{{showInputs}}`, `{{signOutPath}}`, `{{config}}` placeholders. */
  page: string;
  assets: ReadonlyMap<string, { body: string; type: string }>;
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/**
 * Every file the page may load, and nothing else: `GET <base>/assets/:file` serves these only. The style
 * sheets are linked by index.html in this order; the screens are native ES modules (main.js imports the
 * others by relative URL, so each is fetched from here).
 */
export const ADMIN_ASSETS: Readonly<Record<string, string>> = {
  'admin.css': CSS,
  'forms.css': CSS,
  'screens.css': CSS,
  'tables.css': CSS,
  'main.js': JS,
  'settings.js': JS,
  'api.js': JS,
  'dom.js': JS,
  'format.js': JS,
  'scope.js': JS,
  'routes.js': JS,
  'page.js': JS,
  'router.js': JS,
  'live.js': JS,
  'dialogs.js': JS,
  'bots-screen.js': JS,
  'bot-screen.js': JS,
  'triggers-tab.js': JS,
  'add-trigger-form.js': JS,
  'trigger-view.js': JS,
  'trigger-keys.js': JS,
  'callback-section.js': JS,
  'signing-section.js': JS,
  'callback-form.js': JS,
  'deliveries.js': JS,
  'delivery-polling.js': JS,
  'history-tab.js': JS,
  'history-query.js': JS,
  'history-rows.js': JS,
  'run-screen.js': JS,
  'run-summary.js': JS,
  'run-model.js': JS,
  'replay.js': JS,
  'allowed-ips-section.js': JS,
  'audit-screen.js': JS,
  'overview-screen.js': JS,
  'chart.js': JS,
  'chart-geometry.js': JS,
};

/** What the page tells the screens, from the server's own constants. */
export const ADMIN_PAGE_CONFIG: AdminPageConfig = {
  statuses: [...INVOCATION_STATUSES],
  activeStatuses: INVOCATION_STATUSES.filter((s) => !TERMINAL_STATUSES.has(s)),
  callbackEvents: [...CALLBACK_EVENTS],
  alwaysSentEvent: 'invocation.completed',
  historyPageSize: HISTORY_PAGE_SIZE,
  recentRunsCap: RECENT_RUNS_CAP,
  auditActions: [...AUDIT_ACTIONS],
  auditPageSize: AUDIT_PAGE_SIZE,
};

/** The page's Content-Security-Policy: nothing inline, nothing from elsewhere. */
export const ADMIN_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

let cached: AdminScreenFiles | undefined;

/**
 * Finds `admin-ui/` above this file: `<package>/dist/admin/` when installed, `<repo>/src/admin/` in
 * tests, deeper when a host compiles the sources with its own rootDir.
 */
export function loadAdminScreenFiles(): AdminScreenFiles {
  if (cached) return cached;
  let dir = __dirname;
  while (!existsSync(join(dir, 'admin-ui', 'index.html'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`The admin screens' files (admin-ui/index.html) are not in any folder above ${__dirname}`);
    dir = parent;
  }
  const root = join(dir, 'admin-ui');
  const assets = new Map(
    Object.entries(ADMIN_ASSETS).map(([file, type]) => [file, { body: readFileSync(join(root, file), 'utf8'), type }] as const),
  );
  cached = { page: readFileSync(join(root, 'index.html'), 'utf8'), assets };
  return cached;
}

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The page for a mount seen at `base` (its URL path without a trailing slash). */
export function renderAdminPage(
  files: AdminScreenFiles,
  base: string,
  settings: { readOnly: boolean; showInputs: boolean; signOutPath: string | null },
): string {
  const values: Record<string, string> = {
    base: escapeHtml(base),
    readOnly: String(settings.readOnly),
    showInputs: String(settings.showInputs),
    signOutPath: escapeHtml(settings.signOutPath ?? ''),
    config: escapeHtml(JSON.stringify(ADMIN_PAGE_CONFIG)),
  };
  return files.page.replace(/\{\{(base|readOnly|showInputs|signOutPath|config)\}\}/g, (_, name: string) => values[name]);
}
