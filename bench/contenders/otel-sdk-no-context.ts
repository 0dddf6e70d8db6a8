// Preloaded (`node --require`) for the OpenTelemetry cost phase's `sdk-no-context` variant: the same SDK as
// otel-sdk.ts, registered without a context manager, so the report can tell the host's AsyncLocalStorage
// context manager's cost (async hooks on every promise, on Node 20) from the spans' and metrics' own.
process.env.BENCH_OTEL_CONTEXT_MANAGER = 'none';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a preload: the SDK must register after the variable is set
require('./otel-sdk.js');
