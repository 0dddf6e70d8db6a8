// History pages on a large table (contenders/history.ts): each query shape of the admin's history
// screen timed around the repository call, on SQLite and on PostgreSQL, against the same 50 rows read
// by primary key with the bare driver in the same run, and against the 50 ms bar.
import { Contender } from './contender.js';
import type { Row } from './report.js';
import type { HistoryConfig, HistoryResult } from '../contenders/history.js';

export interface HistorySettings {
  rows: number;
  reps: number;
  databases: Array<'sqlite' | 'postgres'>;
  postgresUrl: string;
}

export interface HistoryPhase {
  results: Partial<Record<'sqlite' | 'postgres', HistoryResult>>;
  failures: Partial<Record<'sqlite' | 'postgres', string>>;
}

/** Filling 1,000,000 rows takes a minute or two; the whole call is bounded. */
const RUN_TIMEOUT_MS = 30 * 60_000;
const BAR_MS = 50;

export async function runHistory(s: HistorySettings, script: string, flags: string[], log: (m: string) => void): Promise<HistoryPhase> {
  const phase: HistoryPhase = { results: {}, failures: {} };
  for (const database of s.databases) {
    let c: Contender | undefined;
    try {
      log(`▶ history pages: ${database}, ${s.rows.toLocaleString('en-US')} runs, ${s.reps} repetitions per shape`);
      const config: HistoryConfig = { database, postgresUrl: s.postgresUrl, rows: s.rows, reps: s.reps };
      c = await Contender.start(`history-${database}`, script, config, flags);
      phase.results[database] = await c.call<HistoryResult>('run', undefined, RUN_TIMEOUT_MS);
    } catch (e) {
      phase.failures[database] = e instanceof Error ? e.message : String(e);
      log(`  FAILED: ${phase.failures[database]}`);
    } finally {
      await c?.stop();
    }
  }
  return phase;
}

export function historyRows(phase: HistoryPhase, s: HistorySettings): Row[] {
  const rows: Row[] = [];
  for (const database of s.databases) {
    const r = phase.results[database];
    const failure = phase.failures[database];
    const section = `History page of 50: ${r?.server ?? database}, ${s.rows.toLocaleString('en-US')} runs, ${s.reps} repetitions${
      r ? `, filled in ${(r.fillMs / 1000).toFixed(0)} s` : ''
    }`;
    rows.push({
      section,
      figure: 'baseline: the first page by primary key, bare driver, p50',
      value: r?.baseline.p50 ?? null,
      unit: 'ms',
      failure,
    });
    const shapes = r?.figures ?? [];
    if (failure) rows.push({ section, figure: 'every shape', value: null, unit: 'ms', failure });
    for (const f of shapes) {
      rows.push({
        section,
        figure: `${f.shape}, p50`,
        value: f.p50,
        unit: 'ms',
        baseline: { label: 'PK read', value: r!.baseline.p50 },
      });
      rows.push({
        section,
        figure: `${f.shape}, p95`,
        value: f.p95,
        unit: 'ms',
        baseline: { label: 'PK read', value: r!.baseline.p95 },
        target: { on: 'value', op: '<=', limit: BAR_MS, text: `≤ ${BAR_MS} ms` },
      });
    }
  }
  return rows;
}
