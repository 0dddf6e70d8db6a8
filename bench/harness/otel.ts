// The OpenTelemetry cost phase (`otel`): the trigger endpoint (contenders/nest-trigger.ts, unchanged, at the
// module's default options) run three ways in the same bench run, per adapter:
//   none   — `@opentelemetry/api` installed, no SDK registered (its no-op tracer and meter answer);
//   sdk    — the SDK registered before the app by a preload (contenders/otel-sdk.ts): every span sampled and
//            batched into an exporter, metrics collected every 5 s as a scrape would;
//   absent — `@opentelemetry/*` unresolvable (test/fixtures/block-opentelemetry.cjs preloaded): not installed;
//   sdk-no-context — the same SDK without a context manager (full runs only): shows what the host's
//            AsyncLocalStorage context manager costs on its own (on Node 20, async hooks on every promise).
// Ratios: sdk ÷ none (the issue: within 10 % of throughput), none ÷ absent (the issue: within noise), and
// sdk-no-context ÷ none (informative).
import { join } from 'node:path';
import type { LoadResult } from './load.js';
import type { Row, Target } from './report.js';
import type { TelemetryReport } from '../shared.js';

export type OtelVariant = 'none' | 'sdk' | 'absent' | 'sdk-no-context';

/** How the SDK variants sample: every span (the SDK's default), or BENCH_OTEL_SAMPLING's share of new traces. */
const SAMPLING = Number(process.env.BENCH_OTEL_SAMPLING || 1);
if (!(SAMPLING > 0 && SAMPLING <= 1)) throw new Error('BENCH_OTEL_SAMPLING must be a ratio above 0 and at most 1');
const SAMPLED = SAMPLING < 1 ? `${SAMPLING * 100} % of new traces sampled` : '100 % sampled';

export const OTEL_VARIANTS: Record<OtelVariant, { label: string; short: string }> = {
  none: { label: 'OpenTelemetry API installed, no SDK', short: 'no SDK' },
  sdk: { label: `OpenTelemetry SDK registered (${SAMPLED}, batch export, metrics scraped)`, short: 'SDK registered' },
  absent: { label: 'OpenTelemetry not installed', short: 'not installed' },
  'sdk-no-context': {
    label: `OpenTelemetry SDK registered without a context manager (${SAMPLED}, batch export, metrics scraped)`,
    short: 'SDK, no context manager',
  },
};

/** The preload (node --require) that puts a contender in `variant`, if any. */
export function otelPreload(variant: OtelVariant, contendersDir: string, repoRoot: string): string[] {
  if (variant === 'sdk') return ['--require', join(contendersDir, 'otel-sdk.js')];
  if (variant === 'sdk-no-context') return ['--require', join(contendersDir, 'otel-sdk-no-context.js')];
  if (variant === 'absent') return ['--require', join(repoRoot, 'test', 'fixtures', 'block-opentelemetry.cjs')];
  return [];
}

/** Throws unless the contender really ran as `variant`: spans and scrapes seen with the SDK, no module loaded when absent. */
export function checkTelemetry(variant: OtelVariant, t: TelemetryReport): void {
  if (
    (variant === 'sdk' || variant === 'sdk-no-context') &&
    (!t.sdk || t.sdk.spansExported === 0 || t.sdk.scrapes === 0 || t.sdk.scrapeBytes === 0)
  )
    throw new Error(`the SDK preload saw no spans or no metrics: ${JSON.stringify(t)}`);
  if (variant === 'none' && (!t.apiLoaded || t.sdk)) throw new Error(`expected the API loaded and no SDK: ${JSON.stringify(t)}`);
  if (variant === 'absent' && t.apiLoaded) throw new Error(`an @opentelemetry module was loaded although blocked: ${JSON.stringify(t)}`);
}

/** What the phase reads of one contender's throughput result (run.ts's ThroughputResult). */
export interface OtelFigures {
  load: Record<number, LoadResult>;
  backlog?: { finishedPerSecond: number };
  e2e?: { p50: number; p99: number };
  peakRss?: number;
  telemetry?: TelemetryReport;
  failure?: string;
}

/** The result key of one adapter and variant, and of one round when the phase repeats. */
export const otelKey = (adapter: string, variant: OtelVariant) => `otel-${variant}-${adapter}`;

/** Of several rounds of one contender, the one with the most 2xx/s at 50 connections (least disturbed by the machine). */
export function bestRound(rounds: OtelFigures[]): OtelFigures {
  const ok = rounds.filter((r) => !r.failure);
  if (!ok.length) return rounds[0];
  return ok.reduce((best, r) => ((r.load[50]?.rps ?? 0) > (best.load[50]?.rps ?? 0) ? r : best));
}

const WITHIN_10_PERCENT: Target = { on: 'ratio', op: '>=', limit: 0.9, text: '≥ 0.90×' };

export function otelRows(
  results: Record<string, OtelFigures>,
  s: { adapters: string[]; durationS: number; e2eS: number; connections: number[]; rounds: number },
): Row[] {
  const rows: Row[] = [];
  const pairs: Array<{ value: OtelVariant; baseline: OtelVariant; judged: boolean }> = [
    { value: 'sdk', baseline: 'none', judged: true },
    { value: 'none', baseline: 'absent', judged: true },
    { value: 'sdk-no-context', baseline: 'none', judged: false },
  ];
  for (const adapter of s.adapters) {
    for (const pair of pairs) {
      if (!results[otelKey(adapter, pair.value)]) continue; // a variant the run left out (smoke: no sdk-no-context)
      const target = pair.judged ? WITHIN_10_PERCENT : undefined;
      const v = results[otelKey(adapter, pair.value)];
      const b = results[otelKey(adapter, pair.baseline)];
      const failure = v?.failure ?? (b?.failure ? `baseline failed: ${b.failure}` : undefined);
      const label = OTEL_VARIANTS[pair.baseline].short;
      const rounds = s.rounds > 1 ? `, best of ${s.rounds} rounds` : '';
      const sampled = pair.value === 'none' ? '' : `, ${SAMPLED}`;
      const section = `OpenTelemetry cost, ${adapter}: ${OTEL_VARIANTS[pair.value].short} ÷ ${label} (default options${sampled}, ${s.durationS} s each${rounds})`;
      const row = (figure: string, unit: Row['unit'], pick: (f: OtelFigures) => number | undefined, target?: Target): Row => ({
        section,
        figure,
        value: (v && pick(v)) ?? null,
        unit,
        baseline: { label, value: (b && pick(b)) ?? null },
        ...(target ? { target } : {}),
        failure,
      });
      for (const c of s.connections) {
        rows.push(row(`trigger 2xx/s, ${c} conn`, 'req/s', (f) => f.load[c]?.rps, c === 50 ? target : undefined));
        rows.push(row(`trigger p50, ${c} conn`, 'ms', (f) => f.load[c]?.p50));
        rows.push(row(`trigger p99, ${c} conn`, 'ms', (f) => f.load[c]?.p99));
      }
      rows.push(row('runs finished per second during the 50-conn run', 'runs/s', (f) => f.backlog?.finishedPerSecond, target));
      rows.push(row(`whole run trigger→sync p50, 1 conn, ${s.e2eS} s`, 'ms', (f) => f.e2e?.p50));
      rows.push(row(`whole run trigger→sync p99, 1 conn, ${s.e2eS} s`, 'ms', (f) => f.e2e?.p99));
      rows.push(row('peak RSS', 'MB', (f) => (f.peakRss !== undefined ? f.peakRss / 1024 / 1024 : undefined)));
      const sdk = v?.telemetry?.sdk;
      if (pair.value !== 'none' && sdk)
        rows.push({ section, figure: 'spans exported by the SDK (whole contender life)', value: sdk.spansExported, unit: 'count' });
    }
  }
  return rows;
}
