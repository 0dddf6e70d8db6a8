import type { ServerResponse } from 'node:http';
import { DEFERRED_BODY, type RawRequest } from '../http.types.js';
import type { WebhookRequestOf } from '../webhook-routes.js';
import { answerMethodNotAllowed, answerUndecodableId } from './answer-raw.js';
import type { AnswerHook } from './answer-hook.js';
import { closeIfBodySent } from './stray-body.js';

type ExpressRequest = RawRequest & { _body?: boolean };
type Middleware = (req: ExpressRequest, res: ServerResponse, next: (error?: unknown) => void) => void;
export interface ExpressApp {
  use: (fn: Middleware) => void;
  router?: { stack: unknown[] };
}

/**
 * Express: a middleware in front of Nest's body parsers (registered before module init). For the
 * trigger and cancel routes it marks the body as handled so the host's parsers skip it, and leaves the
 * bytes unread for the trigger handler, after the guards. The GET routes take no body: one sent is kept from
 * the parsers too, never read, and its connection closed after the answer. A webhook path called with another
 * method is answered 405 here. Being first, it also hands every webhook request to the answer hook (metrics;
 * connections closed once shutdown began).
 */
export function captureExpressBodies(app: ExpressApp, webhookRequestOf: WebhookRequestOf, answerHook: AnswerHook): void {
  const capture: Middleware = (req, res, next) => {
    const webhook = webhookRequestOf(req.method, req.url);
    if (!webhook) return next();
    answerHook(webhook, res);
    if (webhook.undecodableId) return answerUndecodableId(webhook.undecodableId, res);
    if (webhook.allow) return answerMethodNotAllowed(req.method, webhook.allow, res);
    if (webhook.readsOwnBody)
      req[DEFERRED_BODY] = { stream: req, contentType: req.headers['content-type'], contentLength: req.headers['content-length'] };
    else if (webhook.ignoresBody) closeIfBodySent(req, res);
    else return next();
    // Body parsers skip a request whose Content-Type they do not handle (body-parser 2 no longer honours
    // `_body`, which body-parser 1 did): the type is kept on the deferred body instead. Set to undefined rather
    // than deleted: a `delete` turns the headers object into a dictionary (a copy, and slower reads after it).
    req.headers['content-type'] = undefined;
    req._body = true;
    next();
  };
  app.use(capture);
  // Nest registered its body parsers before module init; move ours in front of them.
  const stack = app.router?.stack;
  if (stack && stack[stack.length - 1]) stack.unshift(stack.pop());
}
