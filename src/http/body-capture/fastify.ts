import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { DEFERRED_BODY, type RawRequest } from '../http.types.js';
import type { WebhookRequest, WebhookRequestOf } from '../webhook-routes.js';
import { answerMethodNotAllowed, answerUndecodableId } from './answer-raw.js';
import type { AnswerHook } from './answer-hook.js';
import { closeIfBodySent } from './stray-body.js';

/** The front listener's judgement of a webhook request, with the URL it judged, for the preParsing hook. */
const JUDGED = Symbol('webhook-trigger:judged');
type FrontRequest = RawRequest & { [JUDGED]?: { url: string | undefined; webhook: WebhookRequest } };
type PreParsingHook = (request: { raw: FrontRequest; method: string; url: string }, reply: unknown, payload: Readable) => Promise<Readable>;
type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;
export interface FastifyApp {
  addHook: (name: 'preParsing', hook: PreParsingHook) => void;
  server: Server;
}

/**
 * Fastify: a preParsing hook keeps the trigger and cancel bodies from Fastify's parsers, unread, for the
 * trigger handler (after the guards). Fastify's router answers an undecodable path 400 before any hook,
 * so the server's request listener is wrapped to answer those webhook paths 404 first, and a webhook path called
 * with another method 405 (and, being in front of everything, to hand every webhook request to the answer hook).
 * Fastify never parses a GET's body; the listener closes the connection of one that carries a body anyway.
 */
export function captureFastifyBodies(fastify: FastifyApp, webhookRequestOf: WebhookRequestOf, answerHook: AnswerHook): void {
  fastify.addHook('preParsing', async (request, _reply, payload) => {
    if (request.method !== 'POST') return payload;
    // Judged in front, by the URL as it arrived; again when that is not the URL routed (a host's `rewriteUrl`).
    const judged = request.raw[JUDGED];
    const webhook = judged?.url === request.url ? judged.webhook : webhookRequestOf(request.method, request.url);
    if (!webhook?.readsOwnBody) return payload;
    const headers = request.raw.headers;
    request.raw[DEFERRED_BODY] = { stream: payload, contentType: headers['content-type'], contentLength: headers['content-length'] };
    // Present an empty body so Fastify's content-type parsers (and their 415/413) stay out of it. Undefined
    // rather than deleted (Fastify compares with undefined): a `delete` makes the headers a slow dictionary.
    headers['content-type'] = undefined;
    headers['transfer-encoding'] = undefined;
    headers['content-length'] = '0';
    return Readable.from([]);
  });
  const server = fastify.server;
  for (const listener of server.listeners('request') as RequestListener[]) {
    server.removeListener('request', listener);
    server.on('request', (req: FrontRequest, res: ServerResponse) => {
      const webhook = webhookRequestOf(req.method, req.url);
      if (webhook) {
        answerHook(webhook, res);
        if (webhook.undecodableId) return answerUndecodableId(webhook.undecodableId, res);
        if (webhook.allow) return answerMethodNotAllowed(req.method, webhook.allow, res);
        if (webhook.ignoresBody) closeIfBodySent(req, res);
        req[JUDGED] = { url: req.url, webhook };
      }
      listener(req, res);
    });
  }
}
