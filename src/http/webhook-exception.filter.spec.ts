import { type ArgumentsHost, Logger } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { QueryFailedError } from 'typeorm';
import { DatabaseConnectionLostError, UnknownTriggerError } from '../errors/webhook-trigger.errors.js';
import { databaseError, isDatabaseUnavailable } from '../persistence/sql/database-errors.js';
import { WebhookExceptionFilter } from './webhook-exception.filter.js';

/** What the filter answered: status, headers and body, through a fake HTTP adapter. */
function answer(exception: unknown): { status: number; headers: Record<string, string>; body: Record<string, unknown> } {
  const out = { status: 0, headers: {} as Record<string, string>, body: {} as Record<string, unknown> };
  const adapter = {
    setHeader: (_res: unknown, name: string, value: string) => (out.headers[name] = value),
    reply: (_res: unknown, body: Record<string, unknown>, status: number) => Object.assign(out, { body, status }),
  };
  const host = {
    switchToHttp: () => ({ getResponse: () => ({}), getRequest: () => ({ method: 'GET', url: '/x', complete: true }) }),
  } as unknown as ArgumentsHost;
  new WebhookExceptionFilter({ httpAdapter: adapter } as unknown as HttpAdapterHost).catch(exception, host);
  return out;
}

const driverError = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});

describe('WebhookExceptionFilter: a lost database connection', () => {
  it.each([
    [
      'a backend terminated by an administrator (57P01, on QueryFailedError)',
      new QueryFailedError('SELECT 1', [], driverError('terminating connection due to administrator command', '57P01')),
    ],
    ['a connection exception (08006)', new QueryFailedError('SELECT 1', [], driverError('connection failure', '08006'))],
    ['node-postgres: Connection terminated unexpectedly', driverError('Connection terminated unexpectedly')],
    ['a refused connection (ECONNREFUSED)', driverError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
  ])('is answered 503 with Retry-After, not 500: %s', (_what, exception) => {
    expect(isDatabaseUnavailable(exception)).toBe(true);
    const lost = databaseError(exception); // what the SQL executor throws for it
    expect(lost).toBeInstanceOf(DatabaseConnectionLostError);
    expect(answer(lost)).toEqual({
      status: 503,
      headers: { 'Retry-After': '1' },
      body: { success: false, statusCode: 503, error: 'Service Unavailable', message: 'The database connection was lost; retry shortly' },
    });
  });

  it('leaves other database errors and plain errors 500 (their stack goes to the log), and the module errors their own status', () => {
    // The log is where a 500's details go: recorded here instead of printed.
    const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      const constraint = new QueryFailedError('INSERT', [], driverError('duplicate key value violates unique constraint', '23505'));
      expect(isDatabaseUnavailable(constraint)).toBe(false);
      expect(databaseError(constraint)).toBe(constraint);
      expect(answer(constraint).status).toBe(500);
      expect(answer(new Error('boom'))).toMatchObject({ status: 500, headers: {}, body: { message: 'Internal server error' } });
      expect(logged.mock.calls.map(([message, stack]) => [message, String(stack).split('\n')[0]])).toEqual([
        ['Unexpected error in the webhook API', 'QueryFailedError: duplicate key value violates unique constraint'],
        ['Unexpected error in the webhook API', 'Error: boom'],
      ]);
      expect(answer(new UnknownTriggerError('trg_x')).status).toBe(404);
      expect(logged).toHaveBeenCalledTimes(2); // a 404 is not an error of the server
    } finally {
      logged.mockRestore();
    }
  });
});
