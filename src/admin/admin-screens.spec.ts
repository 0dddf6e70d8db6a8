import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CALLBACK_EVENTS, INVOCATION_STATUSES, TERMINAL_STATUSES } from '../persistence/records.js';
import { ADMIN_ASSETS, ADMIN_PAGE_CONFIG, loadAdminScreenFiles, renderAdminPage } from './admin-screens.js';
import { HISTORY_PAGE_SIZE, RECENT_RUNS_CAP } from './admin-views.js';
import { AUDIT_ACTIONS, AUDIT_PAGE_SIZE } from './audit/audit-views.js';

const ADMIN_UI = join(__dirname, '..', '..', 'admin-ui');

describe('the admin screens loader', () => {
  it('serves every module and style sheet of admin-ui/, and nothing else (no specs, not the page)', () => {
    const shipped = readdirSync(ADMIN_UI).filter((file) => /\.(js|css)$/.test(file));
    expect(Object.keys(ADMIN_ASSETS).sort()).toEqual(shipped.sort());
    for (const [file, type] of Object.entries(ADMIN_ASSETS)) {
      expect([file, type]).toEqual([file, file.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8']);
    }
  });

  it("puts the server's statuses, callback events and page size in the page, HTML-escaped", () => {
    const page = renderAdminPage(loadAdminScreenFiles(), '/a"b', { readOnly: true, showInputs: false, signOutPath: null });
    const attribute = /data-config="([^"]*)"/.exec(page)?.[1] ?? '';
    expect(attribute).not.toContain('"');
    expect(JSON.parse(attribute.replace(/&quot;/g, '"').replace(/&amp;/g, '&'))).toEqual(ADMIN_PAGE_CONFIG);
    expect(ADMIN_PAGE_CONFIG).toEqual({
      statuses: [...INVOCATION_STATUSES],
      activeStatuses: INVOCATION_STATUSES.filter((s) => !TERMINAL_STATUSES.has(s)),
      callbackEvents: [...CALLBACK_EVENTS],
      alwaysSentEvent: 'invocation.completed',
      historyPageSize: HISTORY_PAGE_SIZE,
      recentRunsCap: RECENT_RUNS_CAP,
      auditActions: [...AUDIT_ACTIONS],
      auditPageSize: AUDIT_PAGE_SIZE,
    });
    expect(page).toContain('data-base="/a&quot;b"');
    expect(page).toContain('<script type="module" src="/a&quot;b/assets/main.js"></script>');
  });
});
