import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The screens' files, shipped in the package's `admin-ui/` folder and read once at startup. */
export interface AdminScreenFiles {
  /** index.html with `{{base}}`, `{{readOnly}}`, `{{showInputs}}`, `{{signOutPath}}` placeholders. */
  page: string;
  assets: ReadonlyMap<string, { body: string; type: string }>;
}

const ASSET_TYPES: Record<string, string> = {
  'admin.js': 'text/javascript; charset=utf-8',
  'admin.css': 'text/css; charset=utf-8',
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
    Object.entries(ASSET_TYPES).map(([file, type]) => [file, { body: readFileSync(join(root, file), 'utf8'), type }] as const),
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
  };
  return files.page.replace(/\{\{(base|readOnly|showInputs|signOutPath)\}\}/g, (_, name: string) => values[name]);
}
