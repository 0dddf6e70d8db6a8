import { WebhookAdminInputError } from '../errors/webhook-trigger.errors.js';
import { ADMIN_BODY_NOT_OBJECT, BAD_ADMIN_FIELD } from '../errors/webhook-trigger.messages.js';
import type { InvocationStatus } from '../persistence/records.js';
import { queryText } from '../http/query-text.js';
import type { HistoryFilter } from './admin-views.js';

// What the admin API reads from a request before the service checks the values: the body's shape and the
// query's strings. Nothing here decides whether a value is allowed; the admin service does, once.

/** A request's query as the adapter parsed it; read each parameter with `queryParam` (never directly). */
export type RequestQuery = unknown;

export function requireObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new WebhookAdminInputError(ADMIN_BODY_NOT_OBJECT);
  return body as Record<string, unknown>;
}

/** A body that may be left out (no body, or an empty one) reads as `{}`. */
export function optionalObject(body: unknown): Record<string, unknown> {
  return body === undefined || body === null || body === '' ? {} : requireObject(body);
}

/** A query parameter given once as text, or undefined when absent or empty; any other form is a 400 naming it. */
export function queryParam(query: RequestQuery, field: string): string | undefined {
  const value = queryText(query, field, (name) => new WebhookAdminInputError(BAD_ADMIN_FIELD(name, 'given once, as text')));
  return value === '' ? undefined : value;
}

/** `?limit&status&triggerId&from&to&q&before` as a filter; the service checks the values. */
export function historyFilter(query: RequestQuery): HistoryFilter {
  const filter: HistoryFilter = {};
  const text = (field: string): string | undefined => queryParam(query, field);
  const limit = text('limit');
  if (limit !== undefined) filter.limit = /^\d{1,4}$/.test(limit) ? Number(limit) : NaN;
  const status = text('status');
  if (status !== undefined) filter.status = status as InvocationStatus;
  const triggerId = text('triggerId');
  if (triggerId !== undefined) filter.triggerId = triggerId;
  for (const field of ['from', 'to'] as const) {
    const value = text(field);
    if (value !== undefined) filter[field] = new Date(/^\d{4}-\d\d-\d\d/.test(value) ? value : NaN);
  }
  const search = text('q');
  if (search !== undefined) filter.search = search;
  const before = text('before');
  if (before !== undefined) filter.before = before;
  return filter;
}
