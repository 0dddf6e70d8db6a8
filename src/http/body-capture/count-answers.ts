import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebhookMetrics } from '../../telemetry/webhook-metrics.js';
import { webhookOperationOf } from '../webhook-routes.js';

/** Counts one request's answer, when the request is for a webhook route. */
export type AnswerCounter = (req: Pick<IncomingMessage, 'method' | 'url'>, res: ServerResponse) => void;

/**
 * The one place that sees every answer of the webhook routes, whoever gives it (the guard's 401/429, the
 * body's 413, the filter's 503, the undecodable-id 404 before the router, the controller's 2xx): the raw
 * response's `close`, at the very front of the adapter. A client that left before any answer is not counted.
 * Undefined when metrics are off, so requests pay nothing.
 */
export function answerCounter(metrics: WebhookMetrics): AnswerCounter | undefined {
  if (!metrics.enabled) return undefined;
  return (req, res) => {
    const operation = webhookOperationOf(req.method, req.url);
    if (!operation) return;
    res.once('close', () => {
      if (res.headersSent) metrics.requestAnswered(operation, res.statusCode);
    });
  };
}
