import type { IncomingMessage } from 'node:http';
import type { TriggerRecord } from '../persistence/records.js';

/** What the body reader leaves on the raw request of a trigger call, before any host body parser. */
export interface CapturedBody {
  contentType: string | undefined;
  /** The bytes, unless the body was larger than `maxBodyBytes`. */
  bytes: Buffer | null;
  tooLarge: boolean;
}

export const CAPTURED_BODY = Symbol('webhook-trigger:body');
export const AUTHENTICATED_TRIGGER = Symbol('webhook-trigger:trigger');

export type RawRequest = IncomingMessage & { [CAPTURED_BODY]?: CapturedBody; [AUTHENTICATED_TRIGGER]?: TriggerRecord };

/** Express hands Nest the IncomingMessage itself; Fastify wraps it in `request.raw`. */
export function rawRequestOf(request: unknown): RawRequest {
  const r = request as { raw?: RawRequest };
  return (r.raw ?? request) as RawRequest;
}
