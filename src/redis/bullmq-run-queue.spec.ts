import { jobAccount, jobTraceContext, runJobData } from './bullmq-run-queue.js';

describe("a run's job data", () => {
  it('is the bare account id when no trace is recorded, as older versions wrote it', () => {
    expect(runJobData({ accountId: 'acct', traceContext: null })).toBe('acct');
    expect(runJobData({ accountId: 'acct' })).toBe('acct');
    expect(jobAccount('acct')).toBe('acct');
    expect(jobTraceContext('acct')).toBeUndefined();
  });

  it('carries the trace context with the account when there is one', () => {
    const data = runJobData({ accountId: 'acct', traceContext: '{"traceparent":"00-a-b-01"}' });
    // What BullMQ stores: the data as JSON, read back by the worker.
    const read: unknown = JSON.parse(JSON.stringify(data));
    expect(jobAccount(read)).toBe('acct');
    expect(jobTraceContext(read)).toBe('{"traceparent":"00-a-b-01"}');
  });

  it('names no account for data this version did not write', () => {
    expect(jobAccount(undefined)).toBeUndefined();
    expect(jobAccount({ other: 1 })).toBeUndefined();
    expect(jobTraceContext(null)).toBeUndefined();
  });
});
