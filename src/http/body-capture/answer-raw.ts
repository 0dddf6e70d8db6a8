import type { ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import { UnknownInvocationError, UnknownTriggerError } from '../../errors/webhook-trigger.errors.js';
import type { WebhookErrorBody } from '../webhook-exception.filter.js';
import type { WebhookRequest } from '../webhook-routes.js';

/**
 * Answers 404 in the webhook API's error shape, before the host's router, for a webhook route whose id
 * is not valid percent-encoding. Closes the connection: the body is never read.
 */
export function answerUndecodableId(bad: NonNullable<WebhookRequest['undecodableId']>, res: ServerResponse): void {
  const error = bad.kind === 'trigger' ? new UnknownTriggerError(bad.id) : new UnknownInvocationError(bad.id);
  const body: WebhookErrorBody = { success: false, statusCode: 404, error: STATUS_CODES[404]!, message: error.message };
  res.writeHead(404, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
  res.end(JSON.stringify(body));
}
