import type { ExecutionContext } from '@nestjs/common';

/** The controller class and handler a guard sees; metadata-free, so no route-level override applies. */
class FakeController {
  handle(): void {}
}

/**
 * A minimal `ExecutionContext` for an HTTP request, for guards under test. `request` is what the
 * adapter would hand Nest: Express's request itself, or Fastify's wrapper with the Node request in `raw`.
 */
export function httpContext(request: object, response: object = {}): ExecutionContext {
  const http = { getRequest: () => request, getResponse: () => response, getNext: () => () => undefined };
  return {
    getType: () => 'http',
    getClass: () => FakeController,
    getHandler: () => FakeController.prototype.handle,
    getArgs: () => [request, response],
    getArgByIndex: (index: number) => [request, response][index],
    switchToHttp: () => http,
    switchToRpc: () => {
      throw new Error('not an RPC context');
    },
    switchToWs: () => {
      throw new Error('not a WebSocket context');
    },
  } as unknown as ExecutionContext;
}

/** An Express-shaped trigger request: `params`, lower-cased `headers`, `ip`, `socket`. */
export function expressRequest(triggerId: string, headers: Record<string, string> = {}, ip = '203.0.113.7'): Record<string, unknown> {
  return { params: { triggerId }, headers, ip, socket: { remoteAddress: ip } };
}

/** A Fastify-shaped trigger request: the Node request (headers, socket) is under `raw`. */
export function fastifyRequest(triggerId: string, headers: Record<string, string> = {}, ip = '203.0.113.7'): Record<string, unknown> {
  return { params: { triggerId }, ip, raw: { headers, socket: { remoteAddress: ip } } };
}
