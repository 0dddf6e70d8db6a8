import type { ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import { httpStatusOf } from '../../errors/error-status.js';
import {
  MethodNotAllowedError,
  UnknownInvocationError,
  UnknownTriggerError,
  type WebhookTriggerError,
} from '../../errors/webhook-trigger.errors.js';
import type { WebhookErrorBody } from '../webhook-exception.filter.js';
import type { WebhookRequest } from '../webhook-routes.js';

/** Answers one of the module's errors in the webhook API's error shape, before the host's router. Closes the connection: the body is never read. */
function answerRaw(error: WebhookTriggerError, res: ServerResponse, headers: Record<string, string> = {}): void {
  const status = httpStatusOf(error)!;
  const body: WebhookErrorBody = { success: false, statusCode: status, error: STATUS_CODES[status]!, message: error.message };
  res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8', connection: 'close' });
  res.end(JSON.stringify(body));
}

/** 404 for a webhook route whose id is not valid percent-encoding. */
export function answerUndecodableId(bad: NonNullable<WebhookRequest['undecodableId']>, res: ServerResponse): void {
  answerRaw(bad.kind === 'trigger' ? new UnknownTriggerError(bad.id) : new UnknownInvocationError(bad.id), res);
}

/** 405 with `Allow` for a webhook path called with a method it is not served with (no key needed: it is the path's). */
export function answerMethodNotAllowed(method: string | undefined, allowed: string, res: ServerResponse): void {
  answerRaw(new MethodNotAllowedError(String(method), allowed), res, { allow: allowed });
}
