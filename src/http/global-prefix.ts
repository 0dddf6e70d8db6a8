import { RequestMethod } from '@nestjs/common';
import type { ApplicationConfig } from '@nestjs/core';

/** A route the host excluded from its global prefix, as Nest keeps it (`mapToExcludeRoute` of `setGlobalPrefix`). */
interface ExcludedRoute {
  path: string;
  requestMethod: RequestMethod;
  pathRegex: RegExp;
}

type IsRouteExcluded = (excludedRoutes: ExcludedRoute[], path: string, requestMethod: RequestMethod) => boolean;

/**
 * Nest's own test of a route against the global prefix's `exclude` (what its router applies when it mounts
 * the route), from `@nestjs/core/router/utils`: the same path on NestJS 11 (CommonJS) and 12 (ESM, exported
 * as `./*.js`), but not public API. Should a release move it, the fallback is the test both versions make:
 * the method (or `ALL`) and the route's path against the exclusion's `pathRegex`.
 */
function loadIsRouteExcluded(): IsRouteExcluded {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- an internal of the host's Nest, see above
    const utils = require('@nestjs/core/router/utils/index.js') as { isRouteExcluded?: unknown };
    if (typeof utils.isRouteExcluded === 'function') return utils.isRouteExcluded as IsRouteExcluded;
  } catch {
    // not there: the fallback below
  }
  return isRouteExcludedAsNestDoes;
}

/** The fallback: Nest's test (`isRouteExcluded`) as NestJS 11 and 12 make it for the global prefix's exclusions. */
export function isRouteExcludedAsNestDoes(excludedRoutes: ExcludedRoute[], path: string, requestMethod: RequestMethod): boolean {
  const withSlash = path.startsWith('/') ? path : `/${path}`;
  return excludedRoutes.some(
    (route) =>
      (route.requestMethod === RequestMethod.ALL || (route.requestMethod as number) === -1 || route.requestMethod === requestMethod) &&
      route.pathRegex.test(withSlash),
  );
}

const isRouteExcluded = loadIsRouteExcluded();

/**
 * The path at which Nest serves a route of this module: the route's `path` as the controller declares it
 * (parameters as `:name`, e.g. `webhooks/:triggerId/trigger`) under the host's global prefix, unless the
 * prefix's `exclude` covers it (`setGlobalPrefix('api', { exclude: ['webhooks/*path'] })`), judged the way
 * Nest's router judges it: on the declared path and the method. Read at each call: the host sets the prefix
 * after the module's providers are built. Routes of this module are version-neutral, so no version segment.
 */
export function servedPath(appConfig: ApplicationConfig, path: string, method: RequestMethod): string {
  const route = `/${path.replace(/^\/+/, '')}`;
  const prefix = prefixOf(appConfig, route, method);
  return prefix ? `/${prefix}${route}` : route;
}

/**
 * The global prefix Nest serves a route of this module under, without its outer slashes: '' when there is none or
 * when its `exclude` keeps the route (declared path, `:name` parameters) at the root. The one place that decides
 * it: the trigger URLs and the admin screens' path (`servedPath`) and the body capture's matching all ask here.
 */
export function prefixOf(appConfig: ApplicationConfig, path: string, method: RequestMethod): string {
  const prefix = appConfig.getGlobalPrefix().replace(/^\/+|\/+$/g, '');
  return prefix && !excludedFromPrefix(appConfig, path, method) ? prefix : '';
}

/** Whether the global prefix's `exclude` keeps the route at the root, as Nest's router judges it. */
function excludedFromPrefix(appConfig: ApplicationConfig, path: string, method: RequestMethod): boolean {
  const exclude = (appConfig.getGlobalPrefixOptions() as { exclude?: unknown }).exclude;
  return Array.isArray(exclude) && isRouteExcluded(exclude as ExcludedRoute[], `/${path.replace(/^\/+/, '')}`, method);
}
