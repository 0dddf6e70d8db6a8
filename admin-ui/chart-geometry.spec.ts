import { band, labelledBuckets, lineRuns, pathOf, PLOT, roundUp, stackedBars, yAxis, yOf } from './chart-geometry.js';

const BOTTOM = PLOT.height - PLOT.bottom;
const INNER = PLOT.height - PLOT.top - PLOT.bottom;

describe('roundUp and yAxis', () => {
  it.each([
    [0, 1],
    [0.3, 0.5],
    [1, 1],
    [3, 5],
    [7, 10],
    [12, 20],
    [250, 500],
    [1_500, 2_000],
  ])('rounds %d up to %d', (value, round) => {
    expect(roundUp(value)).toBe(round);
  });

  it('ticks from 0 in round steps up to a top at or above the largest value', () => {
    expect(yAxis(7)).toEqual({ top: 8, ticks: [0, 2, 4, 6, 8] });
    expect(yAxis(100)).toEqual({ top: 100, ticks: [0, 50, 100] });
    expect(yAxis(2_750)).toEqual({ top: 3_000, ticks: [0, 1_000, 2_000, 3_000] });
    expect(yAxis(0)).toEqual({ top: 1, ticks: [0, 1] });
    expect(yAxis(2)).toEqual({ top: 2, ticks: [0, 1, 2] });
  });

  it('places 0 on the axis and the top at the top of the plot', () => {
    expect(yOf(0, 10)).toBe(BOTTOM);
    expect(yOf(10, 10)).toBe(PLOT.top);
    expect(yOf(5, 10)).toBe(BOTTOM - INNER / 2);
  });
});

describe('band', () => {
  it('cuts the plot width into equal bands, a bar inside each with a small gap', () => {
    const width = (PLOT.width - PLOT.left - PLOT.right) / 4;
    expect(band(0, 4)).toMatchObject({ x: PLOT.left, width, middle: PLOT.left + width / 2 });
    expect(band(3, 4).x + width).toBeCloseTo(PLOT.width - PLOT.right);
    const { barX, barWidth } = band(1, 4);
    expect(barX).toBeGreaterThan(PLOT.left + width);
    expect(barX + barWidth).toBeLessThan(PLOT.left + 2 * width);
  });
});

describe('stackedBars', () => {
  it('stacks each bucket’s counts upwards in the order of the keys, leaving out zeros', () => {
    const keys = ['succeeded', 'failed', 'cancelled'];
    const { top, bars } = stackedBars(
      [{ succeeded: 3, failed: 1, cancelled: 0 }, { succeeded: 0, failed: 0, cancelled: 0 }, { failed: 4 }],
      keys,
    );
    expect(top).toBe(4);
    expect(bars[1]).toEqual([]);
    const [succeeded, failed] = bars[0];
    expect(succeeded).toMatchObject({ key: 'succeeded', value: 3, y: BOTTOM - (INNER * 3) / 4 });
    expect(succeeded.y + succeeded.height).toBeCloseTo(BOTTOM);
    expect(failed).toMatchObject({ key: 'failed', value: 1, y: PLOT.top });
    expect(failed.y + failed.height).toBeCloseTo(succeeded.y);
    expect(bars[2]).toEqual([expect.objectContaining({ key: 'failed', y: PLOT.top, height: INNER })]);
  });
});

describe('lineRuns and pathOf', () => {
  it('joins consecutive values and breaks the line where a bucket has none', () => {
    const runs = lineRuns([10, 20, null, 5, null], 20);
    expect(runs.map((r) => r.length)).toEqual([2, 1]);
    expect(runs[0][1]).toEqual({ x: band(1, 5).middle, y: PLOT.top });
    expect(runs[1][0].x).toBe(band(3, 5).middle);
    expect(lineRuns([null, null], 1)).toEqual([]);
  });

  it('writes a path to one decimal', () => {
    expect(
      pathOf([
        { x: 1, y: 2.25 },
        { x: 3.333, y: 4 },
      ]),
    ).toBe('M1.0 2.3 L3.3 4.0');
  });
});

describe('labelledBuckets', () => {
  it('labels about six buckets, the first always', () => {
    expect(labelledBuckets(60)).toEqual([0, 10, 20, 30, 40, 50]);
    expect(labelledBuckets(48)).toEqual([0, 8, 16, 24, 32, 40]);
    expect(labelledBuckets(3)).toEqual([0, 1, 2]);
  });
});
