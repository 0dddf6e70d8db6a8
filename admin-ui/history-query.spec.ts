import type { ListedRunAnswer } from '../src/admin/admin-api-answers.js';
import { emptyFilters, historyQuery, isFiltered, listedOutputs, sameRun, toIso } from './history-query.js';

describe('historyQuery', () => {
  it('asks for one page of the newest runs without filters', () => {
    expect(historyQuery('/bots/echo', emptyFilters(), null, 50)).toBe('/bots/echo/invocations?limit=50');
  });

  it('sends every filter set, the times as ISO, and the cursor', () => {
    const from = '2026-11-25T10:00:00';
    const path = historyQuery('/bots/a%20b', { status: 'failed', triggerId: 't1', from, to: '', q: 'key-1' }, 'run-9', 20);
    const [route, search] = path.split('?');
    expect(route).toBe('/bots/a%20b/invocations');
    expect(Object.fromEntries(new URLSearchParams(search))).toEqual({
      limit: '20',
      status: 'failed',
      triggerId: 't1',
      from: new Date(from).toISOString(),
      q: 'key-1',
      before: 'run-9',
    });
  });

  it('leaves out a time the browser could not read', () => {
    expect(historyQuery('/bots/x', { ...emptyFilters(), to: 'not a time' }, null, 5)).toBe('/bots/x/invocations?limit=5');
    expect(toIso('')).toBeNull();
  });
});

describe('isFiltered', () => {
  it('is false for empty filters and true for any one set', () => {
    expect(isFiltered(emptyFilters())).toBe(false);
    for (const field of ['status', 'triggerId', 'from', 'to', 'q'] as const) {
      expect(isFiltered({ ...emptyFilters(), [field]: 'x' })).toBe(true);
    }
  });
});

describe('sameRun', () => {
  const run: ListedRunAnswer = {
    id: 'r1',
    triggerId: 't1',
    status: 'running',
    credits: 1,
    createdAt: '2026-11-25T10:00:00.000Z',
    startedAt: '2026-11-25T10:00:01.000Z',
    finishedAt: null,
    durationMs: null,
    outputs: null,
    outputsTruncated: false,
    errorTruncated: false,
    error: null,
    triggerName: 'main',
    idempotencyKey: null,
  };

  it('is true when the row would not change, whatever else differs', () => {
    expect(sameRun(run, { ...run, startedAt: null, idempotencyKey: 'k' })).toBe(true);
  });

  it('is false when a shown field changed', () => {
    expect(sameRun(run, { ...run, status: 'succeeded' })).toBe(false);
    expect(sameRun(run, { ...run, outputs: [{ title: 'a', message: 'b' }] })).toBe(false);
  });
});

describe('listedOutputs', () => {
  it('lists up to the maximum as "title: message" and counts the rest', () => {
    const outputs = [1, 2, 3, 4, 5].map((n) => ({ title: `t${n}`, message: `m${n}` }));
    expect(listedOutputs(outputs, 3)).toEqual({ lines: ['t1: m1', 't2: m2', 't3: m3'], rest: 2 });
    expect(listedOutputs(outputs.slice(0, 2), 3)).toEqual({ lines: ['t1: m1', 't2: m2'], rest: 0 });
  });
});
