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
 * The method each route of the table is served with: the body capture and the trigger URLs read it here, and the
 * controller declares the same (its spec holds the two together).
 */
export const WEBHOOK_ROUTE_METHODS: { readonly [operation in Operation]: 'GET' | 'POST' } = {
  trigger: 'POST',
  status: 'GET',
  sync: 'GET',
  cancel: 'POST',
  events: 'GET',
};

/** The methods a route of the table is served with (the form of an `Allow` header): Express and Fastify serve a GET's HEAD too. */
type Allowed = 'GET, HEAD' | 'POST';

/**
 * Where the host serves the table's routes: the prefix (with or without its slashes; '' for none) a route is
 * served under, given its path as declared (`/webhooks/:triggerId/trigger`) and its method. In the app, the global
 * prefix unless its `exclude` keeps the route at the root (`prefixOf`, global-prefix.ts).
 */
export type RoutesMount = (routePath: string, method: 'GET' | 'POST') => string;

/** The routes of an app without a global prefix. */
const AT_ROOT: RoutesMount = () => '';

/**
 * A route of the table as a pattern over a request PATH (never the query): the whole path, from the global prefix
 * where it applies, one segment per parameter, captured in order. Case-insensitive because Express routes
 * case-insensitively by default: a request it routes to one of these handlers must be recognised here too.
 */
function pathPattern(routePath: string, prefix: string): RegExp {
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // A parameter of the prefix (`api/:tenant`) is any segment, not captured: the captures are the route's own.
  const segments = (path: string, param: string) =>
    path
      .split('/')
      .filter(Boolean)
      .map((s) => (s.startsWith(':') ? param : literal(s)));
  return new RegExp(`^/${[...segments(prefix, '[^/]+'), ...segments(routePath, '([^/]+)')].join('/')}/?$`, 'i');
}

/** The table's operations (the requests metric's `operation` label). */
type Operation = keyof typeof WEBHOOK_ROUTES;

/** The path of a request URL: everything before `?` or `#`. */
export function pathOf(url: string): string {
  const end = url.search(/[?#]/);
  return end === -1 ? url : url.slice(0, end);
}

/** What the module makes of a request to one of its paths, judged once, at the adapter's front. */
export interface WebhookRequest {
  /**
   * The route whose path it is, whatever the method (a HEAD, a wrong method's 405 and an undecodable id's 404 are
   * answers of that path, counted under it): the requests metric's `operation`; undefined for OPTIONS, the host's.
   */
  operation: Operation | undefined;
  /** A POST to the trigger or cancel route: its body is kept from the host's body parser. */
  readsOwnBody: boolean;
  /**
   * A GET (or HEAD) to the sync, status or events route: any body it carries is kept from the host's body parser and
   * never read, and its connection is closed after the answer.
   */
  ignoresBody: boolean;
  /** For a method the route is not served with: the methods it is (the 405's `Allow`); undefined otherwise. */
  allow: Allowed | undefined;
  /**
   * The id segment that is not valid percent-encoding (`%zz`), whatever the method. Routers answer such paths 400
   * before any guard runs; an id that cannot be decoded cannot exist, so the module answers 404 like for any other
   * impossible id.
   */
  undecodableId: { kind: 'trigger' | 'invocation'; id: string } | undefined;
}

/** Which webhook route's path a request is for (judged on the path, never the query), or undefined for any other. */
export type WebhookRequestOf = (method: string | undefined, url: string | undefined) => WebhookRequest | undefined;

/**
 * Recognises the requests for the table's routes where the host serves them (`mount`), and no others: a host's own
 * route whose path merely ends like one of them (`/partners/webhooks/:id/trigger`) is the host's.
 */
export function webhookRequests(mount: RoutesMount = AT_ROOT): WebhookRequestOf {
  const routes = (Object.keys(WEBHOOK_ROUTES) as Operation[]).map((operation) => {
    const method = WEBHOOK_ROUTE_METHODS[operation];
    const routePath = `/${WEBHOOKS_PATH}/${WEBHOOK_ROUTES[operation]}`;
    const prefix = mount(routePath, method);
    const allow: Allowed = method === 'GET' ? 'GET, HEAD' : 'POST';
    return { operation, method, allow, pattern: pathPattern(routePath, prefix) };
  });
  return (method, url) => {
    if (url === undefined) return undefined;
    const path = pathOf(url);
    for (const route of routes) {
      const match = route.pattern.exec(path);
      if (!match) continue;
      const own = route.method === method;
      const served = own || (route.method === 'GET' && method === 'HEAD');
      return {
        operation: method === 'OPTIONS' ? undefined : route.operation,
        readsOwnBody: own && route.method === 'POST',
        ignoresBody: served && route.method === 'GET',
        // OPTIONS is the host's (a CORS preflight).
        allow: served || method === 'OPTIONS' ? undefined : route.allow,
        undecodableId: path.includes('%') ? undecodableIdOf(match[1], match[2]) : undefined,
      };
    }
    return undefined;
  };
}

function undecodableIdOf(triggerId: string, invocationId: string | undefined): WebhookRequest['undecodableId'] {
  if (!decodes(triggerId)) return { kind: 'trigger', id: triggerId };
  if (invocationId !== undefined && !decodes(invocationId)) return { kind: 'invocation', id: invocationId };
  return undefined;
}

function decodes(segment: string): boolean {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}
