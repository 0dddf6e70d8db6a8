// The table: one row per figure, with its baseline, the ratio, the target and whether it was met.

export type Unit = 'req/s' | 'runs/s' | 'ms' | 'MB' | 'KB' | 'count' | 'runs';

export interface Target {
  /** What is compared with `limit`: the ratio value / baseline, or the value itself. */
  on: 'ratio' | 'value';
  op: '>=' | '<=' | '==';
  limit: number;
  /** As printed, e.g. "≥ 0.50× raw" or "≤ 5 ms". */
  text: string;
  /**
   * A target the issue did not set (the bench's own yardstick): judged and printed, but not counted
   * with the targets and never a reason for BENCH_STRICT to fail.
   */
  informative?: boolean;
}

export interface Row {
  section: string;
  figure: string;
  value: number | null;
  unit: Unit;
  baseline?: { label: string; value: number | null };
  target?: Target;
  /** Why the figure is missing (its phase failed). */
  failure?: string;
}

export type Verdict = 'met' | 'NOT MET' | 'met (informative)' | 'not met (informative)' | 'not judged' | 'FAILED' | '';

export function ratioOf(row: Row): number | null {
  if (!row.baseline || row.value === null || row.baseline.value === null || row.baseline.value === 0) return null;
  return row.value / row.baseline.value;
}

export function verdict(row: Row, judge: boolean): Verdict {
  if (row.failure || (row.target && row.value === null)) return 'FAILED';
  if (!row.target) return '';
  if (!judge) return 'not judged';
  const x = row.target.on === 'ratio' ? ratioOf(row) : row.value;
  if (x === null) return 'FAILED';
  const { op, limit } = row.target;
  const met = op === '>=' ? x >= limit : op === '<=' ? x <= limit : x === limit;
  if (row.target.informative) return met ? 'met (informative)' : 'not met (informative)';
  return met ? 'met' : 'NOT MET';
}

function formatValue(value: number | null, unit: Unit): string {
  if (value === null || Number.isNaN(value)) return '—';
  switch (unit) {
    case 'req/s':
    case 'runs/s':
      return `${Math.round(value).toLocaleString('en-US')} ${unit}`;
    case 'ms':
      return value < 10
        ? `${value.toFixed(2)} ms`
        : value < 100
          ? `${value.toFixed(1)} ms`
          : `${Math.round(value).toLocaleString('en-US')} ms`;
    case 'MB':
      return `${value.toFixed(1)} MB`;
    case 'KB':
      return `${value.toFixed(2)} KB`;
    case 'count':
    case 'runs':
      return `${Math.round(value).toLocaleString('en-US')}${unit === 'runs' ? ' runs' : ''}`;
  }
}

export function renderTable(rows: Row[], judge: boolean): string {
  const header = ['figure', 'value', 'baseline', 'ratio', 'target', 'result'];
  const lines: string[][] = [];
  const sections: Array<{ title: string; at: number }> = [];
  let section = '';
  for (const row of rows) {
    if (row.section !== section) {
      section = row.section;
      sections.push({ title: section, at: lines.length });
    }
    const ratio = ratioOf(row);
    lines.push([
      row.figure,
      row.failure ? `(${row.failure})`.slice(0, 60) : formatValue(row.value, row.unit),
      row.baseline ? `${formatValue(row.baseline.value, row.unit)} ${row.baseline.label}` : '',
      ratio === null ? '' : `${ratio.toFixed(2)}×`,
      row.target?.text ?? '',
      verdict(row, judge),
    ]);
  }
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => (i === 1 || i === 3 ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join(' │ ')
      .trimEnd();
  const rule = widths.map((w) => '─'.repeat(w)).join('─┼─');
  const out = [fmt(header), rule];
  lines.forEach((l, i) => {
    const s = sections.find((x) => x.at === i);
    if (s) out.push(`▸ ${s.title}`);
    out.push(fmt(l));
  });
  return out.join('\n');
}
