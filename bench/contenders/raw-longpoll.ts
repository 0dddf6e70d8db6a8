// The waiting baseline: node:http holding long-poll requests (`GET /wait/:id`) in a Map and answering
// them all when the orchestrator releases them over IPC, with a body of the sync endpoint's shape.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { announceReady, dieOnUnhandled, now, serveRpc } from '../shared.js';

dieOnUnhandled('raw-longpoll');
const held = new Map<string, ServerResponse>();
const BODY = JSON.stringify({ success: true, outputs: [{ title: 'released', message: 'ok' }] });

const server = createServer((req, res) => {
  const match = /^\/wait\/([^/?#]+)$/.exec(req.url ?? '');
  if (req.method !== 'GET' || !match) {
    res.writeHead(404).end();
    return;
  }
  const id = match[1];
  held.set(id, res);
  res.on('close', () => held.delete(id));
});

function answer(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(BODY) });
  res.end(BODY);
}

server.listen(0, '127.0.0.1', () => {
  serveRpc({
    held: () => held.size,
    /** Answers every held request at once; returns when the release began. */
    releaseAll: () => {
      const at = now();
      const all = [...held.values()];
      held.clear();
      for (const res of all) answer(res);
      return at;
    },
  });
  announceReady({ port: (server.address() as AddressInfo).port });
});
