import type { ServerResponse } from 'node:http';

/**
 * Calls `gone` when the client's connection closes before the answer ended; at once when it closed already. A
 * client can leave while the guards await (the trigger's look-up, a rate-limit round trip, a host's own guard), and
 * the response's `close` has then fired before anyone listened: what the handler would hold for it (a sync waiter,
 * an event stream's slot) would be held for nobody until the run ends. Returns what removes the listener.
 */
export function onClientGone(response: ServerResponse, gone: () => void): () => void {
  const onClose = () => {
    if (!response.writableEnded) gone();
  };
  response.on('close', onClose);
  if (response.destroyed) onClose();
  return () => response.off('close', onClose);
}
