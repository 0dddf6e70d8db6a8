import type { AdminPageConfig } from '../src/admin/admin-api-answers.js';
import { parseSettings } from './settings.js';

describe('parseSettings', () => {
  const config: AdminPageConfig = {
    statuses: ['queued', 'running', 'succeeded'],
    activeStatuses: ['queued', 'running'],
    callbackEvents: ['invocation.completed'],
    alwaysSentEvent: 'invocation.completed',
    historyPageSize: 25,
    recentRunsCap: 500,
    auditActions: ['trigger.created'],
    auditPageSize: 50,
  };

  it("reads the page's flags and the server's config", () => {
    const settings = parseSettings({
      api: '/v1/admin/api',
      readOnly: 'true',
      showInputs: 'false',
      signOutPath: '/sign-out',
      config: JSON.stringify(config),
    });
    expect(settings).toMatchObject({ ...config, api: '/v1/admin/api', readOnly: true, showInputs: false, signOutPath: '/sign-out' });
    expect([...settings.active]).toEqual(['queued', 'running']);
  });

  it('takes a missing flag as false', () => {
    expect(parseSettings({ config: JSON.stringify(config) })).toMatchObject({
      api: '',
      readOnly: false,
      showInputs: false,
      signOutPath: '',
    });
  });
});
