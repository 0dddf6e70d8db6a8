import { Readable } from 'node:stream';
import { CAPTURED_BODY, type RawRequest } from '../http.types.js';
import { readsOwnBody } from '../webhook-routes.js';
import { readBody } from './read-body.js';

type PreParsingHook = (request: { raw: RawRequest; method: string; url: string }, reply: unknown, payload: Readable) => Promise<Readable>;
export interface FastifyApp {
  addHook: (name: 'preParsing', hook: PreParsingHook) => void;
}

/** Fastify: a preParsing hook that takes the payload and hands Fastify an empty body instead. */
export function captureFastifyBodies(fastify: FastifyApp, maxBodyBytes: number): void {
  fastify.addHook('preParsing', async (request, _reply, payload) => {
    if (!readsOwnBody(request.method, request.url)) return payload;
    request.raw[CAPTURED_BODY] = await readBody(payload, maxBodyBytes, request.raw.headers['content-type']);
    // Present an empty body so Fastify's content-type parsers (and their 415/413) stay out of it.
    const headers = request.raw.headers;
    delete headers['content-type'];
    delete headers['transfer-encoding'];
    headers['content-length'] = '0';
    return Readable.from([]);
  });
}
