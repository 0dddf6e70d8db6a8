// @ts-check
// The Overview's charts, drawn as inline SVG with the DOM (createElementNS): no library, no innerHTML, no inline
// style (the page's CSP allows neither); colours come from classes in screens.css. Each chart is an image named
// by its <title> and <desc> (the numbers in words), and the screen puts a table of every value beside it.

import { band, labelledBuckets, lineRuns, pathOf, PLOT, stackedBars, yAxis, yOf } from './chart-geometry.js';
import { nextId } from './dom.js';

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * An SVG element with attributes (text children become text nodes).
 * @param {string} tag
 * @param {Record<string, string | number>} [attrs]
 * @param {...(Node | string)} children
 * @returns {SVGElement}
 */
export function svgEl(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  el.append(...children);
  return el;
}

/**
 * @typedef {{
 *   title: string,
 *   description: string,
 *   labels: string[],
 *   formatValue: (value: number) => string,
 * }} ChartText
 * `labels`: each bucket's label (its start time); `formatValue`: the y axis's and tooltips' words for a value.
 */

/**
 * The chart's frame: an image named by its title and description, with the y axis's grid lines and values and
 * some buckets' labels below.
 * @param {ChartText} text
 * @param {number[]} ticks
 * @param {number} top
 */
function frame(text, ticks, top) {
  const titleId = nextId('chart-title');
  const descId = nextId('chart-desc');
  const svg = svgEl(
    'svg',
    { class: 'chart', viewBox: `0 0 ${PLOT.width} ${PLOT.height}`, role: 'img', 'aria-labelledby': `${titleId} ${descId}` },
    svgEl('title', { id: titleId }, text.title),
    svgEl('desc', { id: descId }, text.description),
  );
  for (const tick of ticks) {
    const y = yOf(tick, top);
    svg.append(
      svgEl('line', { class: 'chart-grid', x1: PLOT.left, x2: PLOT.width - PLOT.right, y1: y, y2: y }),
      svgEl('text', { class: 'chart-tick', x: PLOT.left - 6, y: y + 4, 'text-anchor': 'end' }, text.formatValue(tick)),
    );
  }
  for (const i of labelledBuckets(text.labels.length)) {
    const { x } = band(i, text.labels.length);
    svg.append(
      svgEl('line', { class: 'chart-axis', x1: x, x2: x, y1: PLOT.height - PLOT.bottom, y2: PLOT.height - PLOT.bottom + 4 }),
      svgEl('text', { class: 'chart-tick', x, y: PLOT.height - 8, 'text-anchor': 'start' }, text.labels[i]),
    );
  }
  const baseline = PLOT.height - PLOT.bottom;
  svg.append(svgEl('line', { class: 'chart-axis', x1: PLOT.left, x2: PLOT.width - PLOT.right, y1: baseline, y2: baseline }));
  return svg;
}

/**
 * Stacked bars: each bucket's counts by key (a status), coloured by `chart-<key>`; each segment tells its count on
 * hover (its own <title>).
 * @param {ChartText & { counts: Array<Record<string, number>>, keys: readonly string[], keyLabel: (key: string) => string }} chart
 */
export function barChart(chart) {
  const { top, ticks, bars } = stackedBars(chart.counts, chart.keys);
  const svg = frame(chart, ticks, top);
  bars.forEach((segments, i) => {
    for (const s of segments) {
      const words = `${chart.labels[i]}: ${chart.formatValue(s.value)} ${chart.keyLabel(s.key).toLowerCase()}`;
      svg.append(
        svgEl(
          'rect',
          {
            class: `chart-bar chart-${s.key}`,
            x: s.x.toFixed(1),
            y: s.y.toFixed(1),
            width: s.width.toFixed(1),
            height: s.height.toFixed(1),
          },
          svgEl('title', {}, words),
        ),
      );
    }
  });
  return svg;
}

/**
 * Lines, one per series (`chart-<key>`), through the buckets that have a value, with a dot on each value (so a
 * lone bucket shows too).
 * @param {ChartText & { series: Array<{ key: string, label: string, values: Array<number | null> }> }} chart
 */
export function lineChart(chart) {
  const values = chart.series.flatMap((s) => s.values).filter((v) => v !== null);
  const { top, ticks } = yAxis(Math.max(0, ...values));
  const svg = frame(chart, ticks, top);
  for (const series of chart.series) {
    for (const run of lineRuns(series.values, top)) {
      if (run.length > 1) svg.append(svgEl('path', { class: `chart-line chart-${series.key}`, d: pathOf(run) }));
    }
    series.values.forEach((value, i) => {
      if (value === null) return;
      const words = `${chart.labels[i]}: ${series.label} ${chart.formatValue(value)}`;
      const dot = {
        class: `chart-dot chart-${series.key}`,
        cx: band(i, series.values.length).middle.toFixed(1),
        cy: yOf(value, top).toFixed(1),
        r: 2.5,
      };
      svg.append(svgEl('circle', dot, svgEl('title', {}, words)));
    });
  }
  return svg;
}
