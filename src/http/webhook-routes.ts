/**
 * The webhook API's routes, in one table: the controller mounts them and the body capture recognises
 * them by the same paths. The spec fixes the segments.
 */
export const WEBHOOKS_PATH = 'webhooks';
export const WEBHOOK_ROUTES = {
  trigger: ':triggerId/trigger',
  status: ':triggerId/trigger/invocation/:invocationId',
  sync: ':triggerId/trigger/invocation/:invocationId/sync',
  cancel: ':triggerId/trigger/invocation/:invocationId/cancel',
} as const;

/** A route of the table as a pattern over a request PATH (never the query): any global prefix, one segment per parameter. */
function pathPattern(route: string): RegExp {
  const segments = `${WEBHOOKS_PATH}/${route}`.split('/').map((s) => (s.startsWith(':') ? '[^/]+' : s));
  // Case-insensitive because Express routes case-insensitively by default: a request it routes to one
  // of these handlers must be recognised here too.
  return new RegExp(`/${segments.join('/')}/?$`, 'i');
}

/** POST routes whose body the module reads itself, ahead of the host's body parser. */
const OWN_BODY_ROUTES = [pathPattern(WEBHOOK_ROUTES.trigger), pathPattern(WEBHOOK_ROUTES.cancel)];

/** The path of a request URL: everything before `?` or `#`. */
export function pathOf(url: string): string {
  const end = url.search(/[?#]/);
  return end === -1 ? url : url.slice(0, end);
}

/** True for a POST to the trigger or cancel route (whatever the prefix), judged on the path only. */
export function readsOwnBody(method: string | undefined, url: string | undefined): boolean {
  if (method !== 'POST' || url === undefined) return false;
  const path = pathOf(url);
  return OWN_BODY_ROUTES.some((pattern) => pattern.test(path));
}
