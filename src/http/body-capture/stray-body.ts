import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * A GET route of the webhook API takes no body. One that a client sends anyway is never read: the answer closes
 * the connection (`Connection: close`), so the client cannot keep it open by sending more, and Node does not read
 * the rest to reuse it.
 */
export function closeIfBodySent(req: IncomingMessage, res: ServerResponse): void {
  const length = req.headers['content-length'];
  const sent = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (sent && !res.headersSent) res.setHeader('connection', 'close');
}
