import { TESTING_FAKE_TIMERS } from '../errors/webhook-trigger.messages.js';
import { TestClock } from './test-clock.js';

describe('TestClock', () => {
  afterEach(() => jest.useRealTimers());

  it("says what to do when Jest's fake timers are on, instead of never settling", async () => {
    const clock = new TestClock(0);
    let fired = false;
    clock.setTimer(() => (fired = true), 10);
    for (const legacyFakeTimers of [false, true]) {
      jest.useFakeTimers({ legacyFakeTimers });
      await expect(clock.tick(10)).rejects.toThrow(TESTING_FAKE_TIMERS);
      jest.useRealTimers();
    }
    expect(fired).toBe(false);
    await clock.tick(10);
    expect(fired).toBe(true);
  });

  it('ticks with fake timers that keep setImmediate real, as the message suggests', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    const clock = new TestClock(0);
    let fired = false;
    clock.setTimer(() => (fired = true), 10);
    await clock.tick(10);
    expect(fired).toBe(true);
  });
});
