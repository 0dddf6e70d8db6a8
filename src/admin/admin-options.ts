import type { CanActivate, DynamicModule, ForwardReference, InjectionToken, OptionalFactoryDependency, Type } from '@nestjs/common';
import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { ADMIN_INVALID_OPTION, ADMIN_GUARDS_REQUIRED } from '../errors/webhook-trigger.messages.js';

/** A guard class (instantiated by Nest in the admin module, with `imports` for its dependencies) or instance. */
export type AdminGuard = Type<CanActivate> | CanActivate;
type ModuleImport = Type | DynamicModule | Promise<DynamicModule> | ForwardReference;

/** What may change at runtime: the options `forRootAsync`'s factory returns. */
export interface WebhookTriggerAdminSettings {
  /** Hide every change in the screens and refuse every change in the API (403). @default false */
  readOnly?: boolean;
  /** Show a run's inputs in run detail; inputs may hold secrets. @default false */
  showInputs?: boolean;
  /** Most live history streams open at once on this node; one more answers 503. @default 100 */
  maxEventStreams?: number;
  /**
   * Your app's sign-out route (a path on this site, e.g. `/admin/sign-out`): the screens then show a
   * **Sign out** button that POSTs a form to it. The library never signs anyone in or out itself.
   * @default null (no button)
   */
  signOutPath?: string | null;
  /**
   * Who the audit log names for each admin API request, read after your guards ran: return their user id or
   * name (null or undefined when nobody is named; shown as "unknown"). Null reads `request.user` as your guard
   * (e.g. Passport) set it: its `id`, `username`, `email`, `sub` or `name`, else a string `user`.
   * @default null
   */
  auditPrincipal?: ((request: any) => string | null | undefined) | null; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** What routing needs when the module is defined: the mount path and the guards. */
export interface WebhookTriggerAdminMount {
  /** Where the screens are mounted, under the host's global prefix; the JSON API is under `<path>/api`. @default 'admin' */
  path?: string;
  /**
   * Run before every route the module mounts (screens, assets, API, live stream): they decide who is an
   * admin. Required; an explicit `[]` mounts the admin without any guard (a startup warning says so).
   */
  guards: AdminGuard[];
  /** Modules that provide the guards' dependencies. */
  imports?: ModuleImport[];
}

export interface WebhookTriggerAdminOptions extends WebhookTriggerAdminMount, WebhookTriggerAdminSettings {}

export interface WebhookTriggerAdminAsyncOptions extends WebhookTriggerAdminMount {
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  useFactory: (...args: any[]) => WebhookTriggerAdminSettings | Promise<WebhookTriggerAdminSettings>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export type ResolvedAdminSettings = Required<WebhookTriggerAdminSettings>;

export const ADMIN_DEFAULTS: Readonly<ResolvedAdminSettings> = Object.freeze({
  readOnly: false,
  showInputs: false,
  maxEventStreams: 100,
  signOutPath: null,
  auditPrincipal: null,
});
/** A path on this site: one leading slash (never `//`, another host), then URL path characters only. */
const SITE_PATH = /^\/(?!\/)[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/;

/** Token of the resolved settings inside one mount of the admin module. */
export const ADMIN_SETTINGS = Symbol('WEBHOOK_TRIGGER_ADMIN_SETTINGS');

const SETTING_NAMES = Object.keys(ADMIN_DEFAULTS);
const PATH = /^[A-Za-z0-9._~-]+(?:\/[A-Za-z0-9._~-]+)*$/;

/** The mount's path without surrounding slashes; a startup error for anything a URL path cannot hold. */
export function resolveAdminMount(mount: Partial<WebhookTriggerAdminMount> | undefined): { path: string; guards: AdminGuard[] } {
  if (!mount || mount.guards === undefined) throw new WebhookConfigurationError(ADMIN_GUARDS_REQUIRED);
  if (!Array.isArray(mount.guards) || mount.guards.some((g) => typeof g !== 'function' && typeof g?.canActivate !== 'function')) {
    throw new WebhookConfigurationError(ADMIN_INVALID_OPTION('guards', 'a list of guard classes or instances (objects with canActivate)'));
  }
  const path = (mount.path ?? 'admin').replace(/^\/+|\/+$/g, '');
  if (!PATH.test(path)) throw new WebhookConfigurationError(ADMIN_INVALID_OPTION('path', 'a URL path such as "admin" or "ops/webhooks"'));
  return { path, guards: mount.guards };
}

/** Defaults filled in and every value checked; unknown keys are startup errors. */
export function resolveAdminSettings(settings: WebhookTriggerAdminSettings | undefined): ResolvedAdminSettings {
  const given = (settings ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (given[key] !== undefined && !SETTING_NAMES.includes(key)) {
      throw new WebhookConfigurationError(ADMIN_INVALID_OPTION(key, `unknown option; the settings are ${SETTING_NAMES.join(', ')}`));
    }
  }
  const resolved = { ...ADMIN_DEFAULTS, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) };
  for (const key of ['readOnly', 'showInputs'] as const) {
    if (typeof resolved[key] !== 'boolean') throw new WebhookConfigurationError(ADMIN_INVALID_OPTION(key, 'true or false'));
  }
  if (!Number.isInteger(resolved.maxEventStreams) || resolved.maxEventStreams < 1 || resolved.maxEventStreams > 100_000) {
    throw new WebhookConfigurationError(ADMIN_INVALID_OPTION('maxEventStreams', 'a whole number from 1 to 100000'));
  }
  if (resolved.signOutPath !== null && (typeof resolved.signOutPath !== 'string' || !SITE_PATH.test(resolved.signOutPath))) {
    throw new WebhookConfigurationError(ADMIN_INVALID_OPTION('signOutPath', 'a path on this site such as "/admin/sign-out", or null'));
  }
  if (resolved.auditPrincipal !== null && typeof resolved.auditPrincipal !== 'function') {
    throw new WebhookConfigurationError(ADMIN_INVALID_OPTION('auditPrincipal', 'a function (request) => string | null, or null'));
  }
  return Object.freeze(resolved);
}
