import { ManualClock } from './manual-clock.js';
import { SYSTEM_CLOCK } from './clock.js';

describe('ManualClock', () => {
  it('fires timers as the time passes them, in order of due time then of setting, each at its own time', () => {
    const clock = new ManualClock(1_000);
    const fired: Array<[string, number]> = [];
    clock.setTimer(() => fired.push(['b', clock.now()]), 200);
    clock.setTimer(() => fired.push(['a', clock.now()]), 100);
    clock.setTimer(() => fired.push(['c', clock.now()]), 200);
    clock.advance(150);
    expect(fired).toEqual([['a', 1_100]]);
    expect(clock.now()).toBe(1_150);
    clock.advance(50);
    expect(fired).toEqual([
      ['a', 1_100],
      ['b', 1_200],
      ['c', 1_200],
    ]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('never fires a cleared timer, and fires a timer set by a timer within the same move', () => {
    const clock = new ManualClock();
    const fired: number[] = [];
    clock.setTimer(() => fired.push(-1), 10).clear();
    clock.setTimer(() => clock.setTimer(() => fired.push(clock.now()), 30), 20);
    clock.advance(100);
    expect(fired).toEqual([50]);
  });

  it('repeats a repeating timer every period, at most once per move (as an interval after a blocked loop), until cleared', () => {
    const clock = new ManualClock();
    let n = 0;
    const timer = clock.setRepeating(() => n++, 100);
    for (let i = 0; i < 3; i++) clock.advance(100);
    expect(n).toBe(3);
    clock.advance(365 * 24 * 3_600_000); // a year: once, not 315 million times
    expect(n).toBe(4);
    clock.advance(100);
    expect(n).toBe(5);
    timer.clear();
    clock.advance(1_000);
    expect(n).toBe(5);
  });

  it("lets a fired timer's asynchronous work finish before the next one (tick)", async () => {
    const clock = new ManualClock();
    const seen: string[] = [];
    clock.setTimer(() => void Promise.resolve().then(() => seen.push('first, after a promise')), 10);
    clock.setTimer(() => seen.push('second'), 20);
    await clock.tick(20);
    expect(seen).toEqual(['first, after a promise', 'second']);
  });

  it('moves forward only', () => {
    expect(() => new ManualClock().advance(-1)).toThrow(RangeError);
  });
});

describe('SYSTEM_CLOCK', () => {
  it('reads Date.now() and fires a real timer once; a cleared one never', async () => {
    expect(Math.abs(SYSTEM_CLOCK.now() - Date.now())).toBeLessThan(50);
    const fired: string[] = [];
    SYSTEM_CLOCK.setTimer(() => fired.push('cleared'), 5).clear();
    await new Promise<void>((resolve) => SYSTEM_CLOCK.setTimer(() => (fired.push('fired'), resolve()), 5));
    expect(fired).toEqual(['fired']);
  });
});
