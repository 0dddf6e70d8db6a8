import { queryParam, type RequestQuery } from '../admin-api-requests.js';
import type { AuditAction, AuditFilter } from './audit-views.js';

/**
 * `?limit&action&triggerId&principal&from&to&cursor` of `GET api/audit-log` as a filter: each given once (a repeated
 * one, a list or an object is a 400 naming it); the admin service checks the values.
 */
export function auditFilter(query: RequestQuery): AuditFilter {
  const filter: AuditFilter = {};
  const text = (field: string): string | undefined => queryParam(query, field);
  const limit = text('limit');
  if (limit !== undefined) filter.limit = /^\d{1,4}$/.test(limit) ? Number(limit) : NaN;
  const action = text('action');
  if (action !== undefined) filter.action = action as AuditAction;
  for (const field of ['triggerId', 'principal', 'cursor'] as const) {
    const value = text(field);
    if (value !== undefined) filter[field] = value;
  }
  for (const field of ['from', 'to'] as const) {
    const value = text(field);
    if (value !== undefined) filter[field] = new Date(/^\d{4}-\d\d-\d\d/.test(value) ? value : NaN);
  }
  return filter;
}
