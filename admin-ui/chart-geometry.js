// @ts-check
// The Overview's charts as numbers: the plot area, scales with round ticks, stacked bars per bucket, line points
// (broken where a bucket has no value) and which buckets get a time label. Pure (unit-tested); chart.js draws them.

/** @typedef {{ width: number, height: number, left: number, right: number, top: number, bottom: number }} Plot */
/** @typedef {{ x: number, y: number, width: number, height: number, key: string, value: number }} BarSegment */
/** @typedef {{ x: number, y: number }} Point */

/** The charts' drawing box (SVG user units; the SVG scales to its container) and the margins for the axes. */
export const PLOT = Object.freeze({ width: 720, height: 220, left: 64, right: 12, top: 12, bottom: 28 });

/**
 * The smallest round number (1, 2 or 5 × a power of ten) at or above `value`; 1 for nothing to show.
 * @param {number} value
 */
export function roundUp(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value * (1 - 1e-12)) return step * power;
  return 10 * power;
}

/**
 * The y axis for values up to `max`: about `count` round whole steps from 0, the top one at or above `max`.
 * @param {number} max
 * @param {number} [count]
 * @returns {{ top: number, ticks: number[] }}
 */
export function yAxis(max, count = 4) {
  // Whole steps: the charts count runs and milliseconds.
  const step = Math.max(1, roundUp(Math.max(max, 0) / count));
  const steps = Math.max(1, Math.ceil(Math.max(max, 0) / step - 1e-9));
  const ticks = Array.from({ length: steps + 1 }, (_, i) => i * step);
  return { top: steps * step, ticks };
}

/**
 * The vertical position of `value` on a y axis from 0 to `top`.
 * @param {number} value
 * @param {number} top
 * @param {Plot} [plot]
 */
export function yOf(value, top, plot = PLOT) {
  const inner = plot.height - plot.top - plot.bottom;
  return plot.height - plot.bottom - (Math.min(value, top) / top) * inner;
}

/**
 * The horizontal band of bucket `index` of `count`: where its bar goes and its middle.
 * @param {number} index
 * @param {number} count
 * @param {Plot} [plot]
 */
export function band(index, count, plot = PLOT) {
  const width = (plot.width - plot.left - plot.right) / Math.max(count, 1);
  const x = plot.left + index * width;
  const gap = Math.min(width * 0.2, 4);
  return { x, width, barX: x + gap / 2, barWidth: Math.max(width - gap, 1), middle: x + width / 2 };
}

/**
 * Stacked bars: for each bucket, one segment per key with a count above 0, stacked upwards in `keys` order.
 * @param {Array<Record<string, number>>} counts one record per bucket
 * @param {readonly string[]} keys
 * @param {Plot} [plot]
 * @returns {{ top: number, ticks: number[], bars: BarSegment[][] }}
 */
export function stackedBars(counts, keys, plot = PLOT) {
  const totals = counts.map((c) => keys.reduce((sum, key) => sum + (c[key] ?? 0), 0));
  const { top, ticks } = yAxis(Math.max(0, ...totals));
  const bars = counts.map((c, i) => {
    const { barX, barWidth } = band(i, counts.length, plot);
    let below = 0;
    /** @type {BarSegment[]} */
    const segments = [];
    for (const key of keys) {
      const value = c[key] ?? 0;
      if (value <= 0) continue;
      const y = yOf(below + value, top, plot);
      segments.push({ x: barX, y, width: barWidth, height: yOf(below, top, plot) - y, key, value });
      below += value;
    }
    return segments;
  });
  return { top, ticks, bars };
}

/**
 * A line through the buckets' middles, broken where a bucket has no value: the runs of consecutive points.
 * @param {Array<number | null>} values
 * @param {number} top
 * @param {Plot} [plot]
 * @returns {Point[][]}
 */
export function lineRuns(values, top, plot = PLOT) {
  /** @type {Point[][]} */
  const runs = [];
  /** @type {Point[] | null} */
  let current = null;
  values.forEach((value, i) => {
    if (value === null) {
      current = null;
      return;
    }
    if (!current) runs.push((current = []));
    current.push({ x: band(i, values.length, plot).middle, y: yOf(value, top, plot) });
  });
  return runs;
}

/**
 * An SVG path through points (`M x y L x y …`), to one decimal.
 * @param {Point[]} points
 */
export function pathOf(points) {
  return points.map((p, i) => `${i === 0 ? 'M' : 'L'}${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(' ');
}

/**
 * Which buckets get a time label: every `every`-th, so about six labels fit below the chart.
 * @param {number} count
 * @param {number} [labels]
 */
export function labelledBuckets(count, labels = 6) {
  const every = Math.max(1, Math.ceil(count / labels));
  return Array.from({ length: count }, (_, i) => i).filter((i) => i % every === 0);
}
