import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { InvalidRequestError } from '../errors/webhook-trigger.errors.js';
import { QUERY_NOT_SINGLE } from '../errors/webhook-trigger.messages.js';

/**
 * The one reading of a query parameter, for the webhook routes and the admin API alike. The adapters and
 * their query parsers hand a parameter over differently: `?a=1&a=2` is a list on Express and Fastify;
 * `?a[]=1` is a list under Express's extended parser and a key named `a[]` under the simple ones; `?a[b]=1`
 * is an object or a key `a[b]`. Only a parameter given once, as text, is read: any other form is refused
 * (`undefined` comes back only when the parameter is absent in every form), so no route ever handles a list
 * or an object it did not expect (a 500 and a stack in the log, before).
 *
 * Returns the text ('' for `?a=`), `undefined` when absent, or throws what `refuse(name)` makes.
 */
export function queryText(query: unknown, name: string, refuse: (name: string) => Error): string | undefined {
  if (typeof query !== 'object' || query === null) return undefined;
  const params = query as Record<string, unknown>;
  const value = Object.prototype.hasOwnProperty.call(params, name) ? params[name] : undefined;
  if (value !== undefined && typeof value !== 'string') throw refuse(name);
  // The bracket forms under a parser that leaves them as keys: `a[]`, `a[0]`, `a[b]`.
  for (const key of Object.keys(params)) if (key.startsWith(`${name}[`)) throw refuse(name);
  return value;
}

/** `@QueryText('timeout')`: the parameter as text (or undefined when absent); any other form is a 400. */
export const QueryText = createParamDecorator((name: string, context: ExecutionContext): string | undefined =>
  queryText(
    context.switchToHttp().getRequest<{ query?: unknown }>().query,
    name,
    (field) => new InvalidRequestError(QUERY_NOT_SINGLE(field)),
  ),
);
