import { CAPTURED_BODY, type RawRequest } from '../http.types.js';
import { readsOwnBody } from '../webhook-routes.js';
import { readBody } from './read-body.js';

type ExpressRequest = RawRequest & { _body?: boolean };
type Middleware = (req: ExpressRequest, res: unknown, next: (error?: unknown) => void) => void;
export interface ExpressApp {
  use: (fn: Middleware) => void;
  router?: { stack: unknown[] };
}

/** Express: a middleware in front of Nest's body parsers (which were registered before module init). */
export function captureExpressBodies(app: ExpressApp, maxBodyBytes: number): void {
  const capture: Middleware = (req, _res, next) => {
    if (!readsOwnBody(req.method, req.url)) return next();
    readBody(req, maxBodyBytes).then((body) => {
      req[CAPTURED_BODY] = body;
      req._body = true; // body-parser skips requests marked as parsed
      next();
    }, next);
  };
  app.use(capture);
  // Nest registered its body parsers before module init; move ours in front of them.
  const stack = app.router?.stack;
  if (stack && stack[stack.length - 1]) stack.unshift(stack.pop());
}
