import { once } from 'node:events';
import { Agent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ShutdownState } from '../../lifecycle/shutdown.state.js';
import { WebhookMetrics } from '../../telemetry/webhook-metrics.js';
import { SYSTEM_CLOCK } from '../../time/clock.js';
import { webhookRequests } from '../webhook-routes.js';
import { webhookAnswerHook } from './answer-hook.js';
import { until } from '../../../test/helpers/http.js';

const STATUS = '/webhooks/trg_AAAAAAAAAAAAAAAA/trigger/invocation/inv_x';

/** A real HTTP server whose every request goes through the hook first, and is answered when the test says. */
async function serverWithHook(shutdown: ShutdownState): Promise<{ server: Server; url: string; held: Map<string, ServerResponse> }> {
  const hook = webhookAnswerHook(new WebhookMetrics(undefined), shutdown);
  const webhookRequestOf = webhookRequests();
  const held = new Map<string, ServerResponse>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const webhook = webhookRequestOf(req.method, req.url);
    if (webhook) hook(webhook, res);
    const name = String(req.headers['x-name']);
    if (req.headers['x-hold']) held.set(name, res);
    else res.end(name);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, held };
}

/** GET `path` on `agent`: the Connection header of the answer. */
function connectionOf(agent: Agent, url: string, name: string, hold = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers: { 'x-name': name, ...(hold ? { 'x-hold': '1' } : {}) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(String(res.headers.connection)));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('webhookAnswerHook: connections once shutdown began', () => {
  it("closes the connection of every webhook answer from then on, in flight or new; before, and on the host's other routes, they stay alive", async () => {
    const shutdown = new ShutdownState(SYSTEM_CLOCK);
    const { server, url, held } = await serverWithHook(shutdown);
    const agent = new Agent({ keepAlive: true });
    try {
      expect(await connectionOf(agent, url + STATUS, 'before')).toBe('keep-alive');
      const inFlight = connectionOf(agent, url + STATUS, 'in flight', true);
      await until(() => held.has('in flight'), 2_000, 'the request to arrive');
      shutdown.begin();
      held.get('in flight')!.end('answered after');
      expect(await inFlight).toBe('close');
      expect(await connectionOf(agent, url + STATUS, 'after')).toBe('close');
      expect(await connectionOf(agent, url + '/health', 'host route')).toBe('keep-alive');
      // (How long a close takes is the e2e tests' to show: here Node's server.close() drops idle sockets by itself.)
    } finally {
      agent.destroy();
      server.closeAllConnections();
      server.close();
    }
  });
});
