import { WebhookConfigurationError } from '../errors/webhook-trigger.errors.js';
import { MISSING_PACKAGE } from '../errors/webhook-trigger.messages.js';
import type { DispatchedRun } from '../runs/bot-runner.js';
import { withStoredContext } from '../telemetry/run-tracing.js';

// BullMqBotRunner's queue: the optional peer's loader, job names and the runner's timings.

export type BullMq = typeof import('bullmq');

/** How long a job refused a slot stays delayed when no hand-off brings it forward: ±20 %, so they do not return together. */
export function refusedDelay(waiting: number): number {
  const delay = Math.min(REFUSED_DELAY_MAX_MS, REFUSED_DELAY_MIN_MS + REFUSED_DELAY_PER_WAITING_MS * waiting);
  return Math.round(delay * (0.8 + Math.random() * 0.4));
}

/** The optional peer `bullmq`, loaded only when this runner is chosen. */
export function loadBullMq(): BullMq {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the optional peer is loaded only when this runner is chosen
    return require('bullmq') as BullMq;
  } catch {
    throw new WebhookConfigurationError(MISSING_PACKAGE('BullMqBotRunner', 'bullmq@^6.7.0'));
  }
}

/**
 * A job's data: its run's account (what AccountQueuePositions counts), and the trigger request's trace context
 * when the host records traces (`{ accountId, traceContext }`); a bare account id otherwise, as older versions wrote.
 */
export type RunJobData = string | { accountId: string; traceContext: string };

export function runJobData(run: { accountId: string; traceContext?: string | null }): RunJobData {
  return run.traceContext ? { accountId: run.accountId, traceContext: run.traceContext } : run.accountId;
}

/** The account of a job's data, or undefined for data this version did not write. */
export function jobAccount(data: unknown): string | undefined {
  if (typeof data === 'string') return data;
  const accountId = (data as { accountId?: unknown } | null)?.accountId;
  return typeof accountId === 'string' ? accountId : undefined;
}

/** The trace context a job carries, if any. */
export function jobTraceContext(data: unknown): string | undefined {
  const traceContext = (data as { traceContext?: unknown } | null)?.traceContext;
  return typeof traceContext === 'string' ? traceContext : undefined;
}

/** The jobs of dispatched runs (COUNTED_JOB), each at its place in line (`priorities`, AccountQueuePositions). */
export function countedJobs(runs: DispatchedRun[], priorities: number[]) {
  return runs.map((run, i) => ({ name: COUNTED_JOB, data: runJobData(run), opts: { jobId: run.id, priority: priorities[i] } }));
}

/**
 * The jobs a sweep re-adds (SWEPT_JOB): not counted (a run counted before its add failed stays counted, and its end
 * takes it off like any other's), first in line.
 */
export function sweptJobs(runs: DispatchedRun[]) {
  return runs.map((run) => ({ name: SWEPT_JOB, data: runJobData(run), opts: { jobId: run.id, priority: 1 } }));
}

/**
 * A job's processor, run in the trace context its data carries (the trigger request's), so what a worker's own
 * instrumentation records while it takes the job (Redis, the database) joins the caller's trace.
 */
export function inJobTraceContext<J extends { data: unknown }, R>(process: (job: J, token?: string) => R): (job: J, token?: string) => R {
  return (job, token) => withStoredContext(jobTraceContext(job.data), () => process(job, token));
}

/** The job of a dispatched run, counted in its account's runs pending (AccountQueuePositions) until it ends. */
const COUNTED_JOB = 'run';
/** A job a sweep re-added: not counted (the add is a no-op when the job is still in the queue). */
const SWEPT_JOB = 'swept';

/** Name of the queue inside the `redis.keyPrefix` namespace. */
export const WEBHOOK_RUN_QUEUE = 'runs';
/** Most queued ids one sweep re-dispatches. */
export const SWEEP_BATCH = 1000;
/** A failed enqueue fails fast instead of holding the trigger request until Redis is back. */
export const ENQUEUE_TIMEOUT_MS = 2000;
/** Most jobs in one `addBulk` of dispatched runs; more waiting go in the next, right after. */
export const ENQUEUE_BATCH = 1000;
/**
 * A job refused a slot (its account is at its cap) is brought forward when a slot frees; its delay is
 * only the safety net (a hand-off lost with a dead worker, or raced): the least, plus a little per run of
 * the account waiting, so a deep backlog is not fetched and refused over and over.
 */
const REFUSED_DELAY_MIN_MS = 200;
const REFUSED_DELAY_PER_WAITING_MS = 5;
const REFUSED_DELAY_MAX_MS = 60_000;
/** Waiting runs a freed slot tries to bring forward before it gives up (each may have just started, or be gone). */
export const HAND_OFF_TRIES = 3;
/** How often the queue's backlog (waiting and delayed jobs) is read for `maxQueuedRuns`: never on a trigger's path. */
export const BACKLOG_READ_MS = 250;
