import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got, with its body as the raw bytes sent. */
export interface ReceivedCallback {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** How the receiver answers one request; it may also never answer (leave `res` open). */
export type CallbackResponder = (res: ServerResponse, req: ReceivedCallback) => void;

/** A local HTTP server standing for a callback receiver: it records what arrives and answers as told. */
export interface CallbackReceiver {
  /** http://127.0.0.1:<port> */
  origin: string;
  port: number;
  received: ReceivedCallback[];
  /** How the next requests are answered (200 with an empty body until set). */
  respond(responder: CallbackResponder): void;
  close(): Promise<void>;
}

export async function startCallbackReceiver(host = '127.0.0.1'): Promise<CallbackReceiver> {
  const received: ReceivedCallback[] = [];
  let responder: CallbackResponder = (res) => res.writeHead(200).end();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const call = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      received.push(call);
      responder(res, call);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    received,
    respond: (next) => {
      responder = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
