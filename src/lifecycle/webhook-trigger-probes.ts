import { Inject, Injectable } from '@nestjs/common';
import type { ServiceCheck } from '../health/service-check.js';
import { ClusterBus } from '../cluster/cluster-bus.js';
import { PROBE_BACKLOG_FULL, PROBE_NO_ANSWER, PROBE_NO_WORKER, PROBE_PART_FAILED } from '../errors/webhook-trigger.messages.js';
import { RESOLVED_OPTIONS } from '../options/module.constants.js';
import type { ResolvedWebhookTriggerOptions } from '../options/webhook-trigger-options.interface.js';
import { WebhookStorage } from '../persistence/webhook-storage.js';
import { RateLimitStorage } from '../rate-limits/rate-limit.storage.js';
import { BotRunner } from '../runs/bot-runner.js';
import { RunBacklog } from '../runs/run-backlog.js';

/** Longest a probe waits for the database or a service: a health check must answer while they hang. */
export const PROBE_TIMEOUT_MS = 2_000;

/** One check: `up` or `down`, with what it measured and, when down, why. */
export interface ProbeResult {
  status: 'up' | 'down';
  /** Why it is down. */
  error?: string;
  [measured: string]: unknown;
}

/** Every check of this node, by name (`database`, `redis` when used, `backlog`, `workers` on `'api'` nodes). */
export interface WebhookTriggerHealth {
  /** `'up'` when every check is. */
  status: 'up' | 'down';
  checks: Record<string, ProbeResult>;
}

/**
 * Whether this node can serve, for a health endpoint (`nestjs-webhook-triggers/terminus` maps it to
 * `@nestjs/terminus`; a host may read it directly). Each call checks, with `PROBE_TIMEOUT_MS` each:
 * - `database`: a cheap read through the storage (`WebhookStorage.ping`);
 * - one entry per outside service the runner, the cluster bus or the rate-limit storage relies on
 *   (`redis`: a PING on each of their connections), only when they do;
 * - `backlog`: runs waiting to start (what `maxQueuedRuns` bounds: this node's runner's, and those waiting to be
 *   dispatched again), down at the bound;
 * - `workers`, on `'api'` nodes with a runner that has workers: down when none was seen recently.
 * Nothing here needs `@nestjs/terminus`.
 */
@Injectable()
export class WebhookTriggerProbes {
  constructor(
    private readonly storage: WebhookStorage,
    private readonly runner: BotRunner,
    private readonly bus: ClusterBus,
    private readonly rateLimits: RateLimitStorage,
    private readonly runBacklog: RunBacklog,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedWebhookTriggerOptions,
  ) {}

  async check(): Promise<WebhookTriggerHealth> {
    const services = new Map<string, ServiceCheck[]>();
    for (const check of [...this.runner.serviceChecks(), ...this.bus.serviceChecks(), ...this.rateLimits.serviceChecks()]) {
      services.set(check.service, [...(services.get(check.service) ?? []), check]);
    }
    const checks: Record<string, Promise<ProbeResult>> = { database: this.database() };
    for (const [service, parts] of services) checks[service] = this.service(parts);
    checks.backlog = Promise.resolve(this.backlog());
    if (this.options.role === 'api') checks.workers = this.workers();
    const names = Object.keys(checks);
    const results = await Promise.all(Object.values(checks));
    const byName = Object.fromEntries(names.map((name, i) => [name, results[i]]));
    return { status: results.every((r) => r.status === 'up') ? 'up' : 'down', checks: byName };
  }

  private async database(): Promise<ProbeResult> {
    const started = performance.now();
    try {
      await answerWithin(this.storage.ping());
      return { status: 'up', latencyMs: Math.round(performance.now() - started) };
    } catch (error) {
      return { status: 'down', error: (error as Error).message };
    }
  }

  private async service(parts: ServiceCheck[]): Promise<ProbeResult> {
    const started = performance.now();
    const failures = await Promise.all(
      parts.map((part) =>
        answerWithin(part.ping()).then(
          () => null,
          (error: unknown) => PROBE_PART_FAILED(part.part, (error as Error).message),
        ),
      ),
    );
    const failed = failures.filter((f) => f !== null);
    if (failed.length > 0) return { status: 'down', error: failed.join('; ') };
    return { status: 'up', latencyMs: Math.round(performance.now() - started) };
  }

  private backlog(): ProbeResult {
    // Counted and judged as the trigger's refusal does, or triggers could be refused 503 while this check said up.
    const queued = this.runBacklog.count();
    const max = this.options.maxQueuedRuns;
    if (this.runBacklog.full(queued)) return { status: 'down', queued, max, error: PROBE_BACKLOG_FULL(queued, max) };
    return { status: 'up', queued, max: max > 0 ? max : null };
  }

  private async workers(): Promise<ProbeResult> {
    try {
      const seen = await answerWithin(this.runner.workersSeen());
      if (seen === null) return { status: 'up' };
      if (seen.workers > 0) return { status: 'up', seen: seen.workers, withinMs: seen.withinMs };
      return { status: 'down', seen: 0, withinMs: seen.withinMs, error: PROBE_NO_WORKER(seen.withinMs) };
    } catch (error) {
      return { status: 'down', error: (error as Error).message };
    }
  }
}

/** The promise's value, or a rejection once `PROBE_TIMEOUT_MS` passed without one. */
async function answerWithin<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(PROBE_NO_ANSWER(PROBE_TIMEOUT_MS))), PROBE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
