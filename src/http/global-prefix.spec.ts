import { type INestApplication, RequestMethod } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { isRouteExcludedAsNestDoes, servedPath } from './global-prefix.js';

describe('servedPath', () => {
  /** The exclusions as Nest keeps them once the host called `setGlobalPrefix('api', { exclude })`. */
  async function configWith(exclude: NonNullable<Parameters<INestApplication['setGlobalPrefix']>[1]>['exclude']) {
    const app = (await Test.createTestingModule({}).compile()).createNestApplication({ logger: false });
    app.setGlobalPrefix('api', { exclude });
    return { config: app.get(ApplicationConfig), close: () => app.close() };
  }

  it("the fallback judges every exclusion as Nest's own isRouteExcluded does", async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the internal servedPath uses when it is there
    const nest = require('@nestjs/core/router/utils/index.js') as { isRouteExcluded: typeof isRouteExcludedAsNestDoes };
    const { config, close } = await configWith([
      'webhooks/*path',
      'ping',
      { path: 'webhooks/:id/trigger', method: RequestMethod.POST },
      { path: 'hooks/:id', method: RequestMethod.GET },
    ]);
    try {
      const exclude = config.getGlobalPrefixOptions().exclude as unknown as Parameters<typeof isRouteExcludedAsNestDoes>[0];
      for (const path of ['/webhooks/:triggerId/trigger', 'webhooks/:triggerId/trigger', '/ping', '/hooks/:id', '/other/:id', '/webhooks'])
        for (const method of [RequestMethod.GET, RequestMethod.POST, RequestMethod.PUT])
          for (const one of exclude)
            expect([path, method, one.path, isRouteExcludedAsNestDoes([one], path, method)]).toEqual([
              path,
              method,
              one.path,
              nest.isRouteExcluded([one], path, method),
            ]);
    } finally {
      await close();
    }
  });

  it('puts the prefix before a route its exclude does not cover, and only there', async () => {
    const { config, close } = await configWith([{ path: 'webhooks/:id/trigger', method: RequestMethod.POST }]);
    try {
      expect(servedPath(config, 'webhooks/:triggerId/trigger', RequestMethod.POST)).toBe('/webhooks/:triggerId/trigger');
      expect(servedPath(config, 'webhooks/:triggerId/trigger/invocation/:invocationId', RequestMethod.GET)).toBe(
        '/api/webhooks/:triggerId/trigger/invocation/:invocationId',
      );
    } finally {
      await close();
    }
  });
});
