import { getDataSourceToken } from '@nestjs/typeorm';
import { dataSourceToken } from './webhook-data-source.js';

describe('dataSourceToken', () => {
  it.each(['default', 'reports', 'webhooks'])(
    'is the token @nestjs/typeorm registers the DataSource "%s" under (the module does not load @nestjs/typeorm to ask)',
    (name) => {
      expect(dataSourceToken(name)).toBe(getDataSourceToken(name));
    },
  );
});
