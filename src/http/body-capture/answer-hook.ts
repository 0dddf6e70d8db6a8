import type { ServerResponse } from 'node:http';
import type { ShutdownState } from '../../lifecycle/shutdown.state.js';
import type { WebhookMetrics } from '../../telemetry/webhook-metrics.js';
import type { WebhookRequest } from '../webhook-routes.js';

/** Sees each webhook request at the very front of the adapter (as `webhookRequestOf` judged it), with its raw response. */
export type AnswerHook = (request: WebhookRequest, res: ServerResponse) => void;

/** Asks Node to close the connection after this answer, when its headers are still to be written. */
function closeAfter(res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('connection', 'close');
}

/**
 * The one place that sees every answer of the webhook routes, whoever gives it (the guard's 401/429, the body's
 * 413, the filter's 503, the undecodable-id 404 and the wrong-method 405 before the router, the controller's 2xx),
 * from the front of the adapter to the raw response's `close`. Other routes are not touched. Two things are decided here:
 * - **metrics**: each answer counted by operation and status code (a client that left before any answer is not);
 * - **shutdown**: once it began, every answer of the webhook routes closes its connection (`Connection: close`),
 *   those of requests already in flight then too. A caller's retry then opens a new connection, which a load
 *   balancer gives to a node that is not stopping, and no kept-alive connection holds the server's close: Node's
 *   `server.close()` ends only the idle ones, and one whose request was in flight stayed open for the server's
 *   keep-alive timeout after its answer (5 s on Express, 72 s on Fastify). The host's own routes keep theirs.
 */
export function webhookAnswerHook(metrics: WebhookMetrics, shutdown: ShutdownState): AnswerHook {
  const counted = metrics.enabled;
  /** Webhook answers not written yet, while shutdown has not begun. */
  const inFlight = new Set<ServerResponse>();
  shutdown.signal.addEventListener(
    'abort',
    () => {
      for (const res of inFlight) closeAfter(res);
      inFlight.clear();
    },
    { once: true },
  );
  return ({ operation }, res) => {
    if (!operation) return;
    if (shutdown.isShuttingDown) closeAfter(res);
    else inFlight.add(res);
    res.once('close', () => {
      inFlight.delete(res);
      if (counted && res.headersSent) metrics.requestAnswered(operation, res.statusCode);
    });
  };
}
