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
  events: ':triggerId/trigger/invocation/:invocationId/events',
} as const;

/**
 * A route of the table as a pattern over a request PATH (never the query): any global prefix, one
 * segment per parameter, captured in order. Case-insensitive because Express routes case-insensitively
 * by default: a request it routes to one of these handlers must be recognised here too.
 */
function pathPattern(route: string): RegExp {
  const segments = `${WEBHOOKS_PATH}/${route}`.split('/').map((s) => (s.startsWith(':') ? '([^/]+)' : s));
  return new RegExp(`/${segments.join('/')}/?$`, 'i');
}

const PATTERNS = Object.values(WEBHOOK_ROUTES).map(pathPattern);
/** POST routes whose body the module keeps from the host's body parser. */
const OWN_BODY_ROUTES = [pathPattern(WEBHOOK_ROUTES.trigger), pathPattern(WEBHOOK_ROUTES.cancel)];

/** The path of a request URL: everything before `?` or `#`. */
export function pathOf(url: string): string {
  const end = url.search(/[?#]/);
  return end === -1 ? url : url.slice(0, end);
}

/** Each route's method, by its operation (the `operation` label of the requests metric). */
const OPERATIONS = (['trigger', 'status', 'sync', 'cancel', 'events'] as const).map((operation) => ({
  operation,
  method: operation === 'trigger' || operation === 'cancel' ? 'POST' : 'GET',
  pattern: pathPattern(WEBHOOK_ROUTES[operation]),
}));

/** Which webhook route a request is for (method and path, never the query), or undefined for any other route. */
export function webhookOperationOf(method: string | undefined, url: string | undefined): keyof typeof WEBHOOK_ROUTES | undefined {
  if (url === undefined) return undefined;
  const path = pathOf(url);
  return OPERATIONS.find((route) => route.method === method && route.pattern.test(path))?.operation;
}

/** True for a POST to the trigger or cancel route (whatever the prefix), judged on the path only. */
export function readsOwnBody(method: string | undefined, url: string | undefined): boolean {
  if (method !== 'POST' || url === undefined) return false;
  const path = pathOf(url);
  return OWN_BODY_ROUTES.some((pattern) => pattern.test(path));
}

/**
 * For a request to one of the webhook routes whose id segment is not valid percent-encoding (`%zz`):
 * which id it is. Routers answer such paths 400 before any guard runs; an id that cannot be decoded
 * cannot exist, so the module answers 404 like for any other impossible id.
 */
export function undecodableId(url: string | undefined): { kind: 'trigger' | 'invocation'; id: string } | null {
  if (url === undefined || !url.includes('%')) return null;
  const path = pathOf(url);
  for (const pattern of PATTERNS) {
    const match = pattern.exec(path);
    if (!match) continue;
    const [, triggerId, invocationId] = match;
    if (!decodes(triggerId)) return { kind: 'trigger', id: triggerId };
    if (invocationId !== undefined && !decodes(invocationId)) return { kind: 'invocation', id: invocationId };
    return null;
  }
  return null;
}

function decodes(segment: string): boolean {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}
