// Closed-loop load with autocannon's programmatic API. Latencies are taken from autocannon's
// per-response event (sub-millisecond, from process.hrtime) rather than its histogram, which rounds to
// whole milliseconds: a 0.4 ms p50 must not read as 0.
import autocannon from 'autocannon';
import { now, TRIGGER_BODY } from '../shared.js';

export interface LoadResult {
  connections: number;
  seconds: number;
  /** 2xx answers per second of the measurement. */
  rps: number;
  /** ms, of 2xx answers */
  p50: number;
  p99: number;
  ok: number;
  /** Answers other than 2xx and 503. */
  non2xx: number;
  /** 503 answers: the node's backlog was full (`maxQueuedRuns`), nothing stored or charged. */
  refused: number;
  errors: number;
  timeouts: number;
}

export interface LoadTarget {
  port: number;
  trigger: { id: string; key: string };
}

/** The sorted copy's value at quantile q (nearest rank). */
export function quantile(values: ArrayLike<number>, q: number): number {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

export function triggerUrl(target: LoadTarget): string {
  return `http://127.0.0.1:${target.port}/webhooks/${target.trigger.id}/trigger`;
}

export function triggerHeaders(target: LoadTarget): Record<string, string> {
  return { 'content-type': 'application/json', 'x-key': target.trigger.key };
}

/** POSTs the trigger body over `connections` keep-alive connections for `seconds`. */
export async function load(target: LoadTarget, connections: number, seconds: number): Promise<LoadResult> {
  return summarize(await run(target, connections, seconds, now()));
}

/**
 * The same load spread over several targets at once (e.g. two API nodes of one cluster): one autocannon
 * instance per target, `connectionsEach` connections each, all started together in this process. The
 * result merges every answer (req/s over the longest instance's wall time, percentiles over all 2xx
 * latencies); `each` holds every target's own figures.
 */
export async function loadSpread(
  targets: LoadTarget[],
  connectionsEach: number,
  seconds: number,
): Promise<LoadResult & { each: LoadResult[] }> {
  const start = now();
  const runs = await Promise.all(targets.map((t) => run(t, connectionsEach, seconds, start)));
  const merged: Raw = {
    connections: connectionsEach * targets.length,
    elapsed: Math.max(...runs.map((r) => r.elapsed)),
    latencies: runs.flatMap((r) => r.latencies),
    non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
    refused: runs.reduce((n, r) => n + r.refused, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    timeouts: runs.reduce((n, r) => n + r.timeouts, 0),
  };
  return { ...summarize(merged), each: runs.map(summarize) };
}

interface Raw {
  connections: number;
  /** Seconds from `start` to this instance's end. */
  elapsed: number;
  latencies: number[];
  non2xx: number;
  refused: number;
  errors: number;
  timeouts: number;
}

function summarize(r: Raw): LoadResult {
  return {
    connections: r.connections,
    seconds: r.elapsed,
    rps: r.latencies.length / r.elapsed,
    p50: quantile(r.latencies, 0.5),
    p99: quantile(r.latencies, 0.99),
    ok: r.latencies.length,
    non2xx: r.non2xx,
    refused: r.refused,
    errors: r.errors,
    timeouts: r.timeouts,
  };
}

function run(target: LoadTarget, connections: number, seconds: number, start: number): Promise<Raw> {
  const latencies: number[] = [];
  let non2xx = 0;
  let refused = 0;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: triggerUrl(target),
        method: 'POST',
        headers: triggerHeaders(target),
        body: TRIGGER_BODY,
        connections,
        pipelining: 1,
        duration: seconds,
        timeout: 10,
      },
      (error, result) => {
        if (error) return reject(error instanceof Error ? error : new Error('autocannon failed', { cause: error }));
        resolve({
          connections,
          elapsed: (now() - start) / 1000,
          latencies,
          // autocannon's own non2xx counts the 503s too.
          non2xx: Math.max(non2xx, result.non2xx - refused),
          refused,
          errors: result.errors,
          timeouts: result.timeouts,
        });
      },
    );
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
      else if (statusCode === 503) refused++;
      else non2xx++;
    });
  });
}

/** Why a load result cannot be trusted, or null. A 503 (backlog full) is an answer the load may get. */
export function loadProblem(r: LoadResult): string | null {
  if (r.ok > 0 && !r.non2xx && !r.errors && !r.timeouts) return null;
  return `${r.ok} 2xx answers, ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`;
}
