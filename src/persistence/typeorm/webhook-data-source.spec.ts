import { getDataSourceToken } from '@nestjs/typeorm';
import { dataSourceToken, sqliteDriverHazard } from './webhook-data-source.js';

describe('dataSourceToken', () => {
  it.each(['default', 'reports', 'webhooks'])(
    'is the token @nestjs/typeorm registers the DataSource "%s" under (the module does not load @nestjs/typeorm to ask)',
    (name) => {
      expect(dataSourceToken(name)).toBe(getDataSourceToken(name));
    },
  );
});

describe('sqliteDriverHazard (the startup warning of better-sqlite3 before 13 on Node 24.19 and later)', () => {
  it.each([
    ['v24.19.0', '12.11.1'],
    ['v24.22.3', '12.0.0'],
    ['v26.12.1', '11.10.0'],
  ])('warns on Node %s with better-sqlite3 %s, naming both and the fix', (node, driver) => {
    const warning = sqliteDriverHazard(node, driver);
    expect(warning).toContain(`better-sqlite3 ${driver} on Node ${node} can abort the process`);
    expect(warning).toContain('better-sqlite3 13');
    expect(warning).toContain('docs/configuration.md');
  });

  it.each([
    ['v20.20.2', '12.11.1'],
    ['v22.23.5', '12.11.1'],
    ['v24.18.1', '12.11.1'],
    ['v24.22.3', '13.2.0'],
    ['v26.12.1', '13.0.0'],
    ['v26.12.1', undefined],
  ])('is silent on Node %s with better-sqlite3 %s', (node, driver) => {
    expect(sqliteDriverHazard(node, driver)).toBeUndefined();
  });
});
