import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { TriggerRecord } from '../persistence/records.js';

/**
 * A trigger (or cancel) request's body, kept away from the host's body parser and not read yet: the
 * guards decide 404/401/429 from the path and headers first, and only the trigger handler reads it.
 */
export interface DeferredBody {
  /** Where the bytes will come from (the request itself on Express; Fastify's payload stream). */
  stream: Readable;
  /** The request's own headers, as sent (Fastify's hook hides them from Fastify's parsers). */
  contentType: string | undefined;
  contentLength: string | undefined;
}

export const DEFERRED_BODY = Symbol('webhook-trigger:deferred-body');
export const AUTHENTICATED_TRIGGER = Symbol('webhook-trigger:trigger');

export type RawRequest = IncomingMessage & { [DEFERRED_BODY]?: DeferredBody; [AUTHENTICATED_TRIGGER]?: TriggerRecord };

/** Express hands Nest the IncomingMessage itself; Fastify wraps it in `request.raw`. */
export function rawRequestOf(request: unknown): RawRequest {
  const r = request as { raw?: RawRequest };
  return (r.raw ?? request) as RawRequest;
}

/** The body the host parser was kept away from, or the request itself when nothing was deferred. */
export function deferredBodyOf(raw: RawRequest): DeferredBody {
  return raw[DEFERRED_BODY] ?? { stream: raw, contentType: raw.headers['content-type'], contentLength: raw.headers['content-length'] };
}
