import { InMemoryClusterBus } from './in-memory-cluster.bus.js';

describe('InMemoryClusterBus', () => {
  let bus: InMemoryClusterBus;
  beforeEach(() => (bus = new InMemoryClusterBus()));

  it('wakes every waiter of the finished id, and only those', async () => {
    const woken: string[] = [];
    bus.subscribe('inv_a', () => woken.push('a1'));
    bus.subscribe('inv_a', () => woken.push('a2'));
    bus.subscribe('inv_b', () => woken.push('b'));
    await bus.publish('inv_a');
    expect(woken.sort()).toEqual(['a1', 'a2']);
  });

  it('forgets an id once it has been published, so waiters are woken once and nothing leaks', async () => {
    const listener = jest.fn();
    bus.subscribe('inv_a', listener);
    expect(bus.waitingIds).toBe(1);
    await bus.publish('inv_a');
    await bus.publish('inv_a');
    expect(listener).toHaveBeenCalledTimes(1);
    expect(bus.waitingIds).toBe(0);
  });

  it('does not wake a waiter that unsubscribed, and drops the id with its last waiter', async () => {
    const gone = jest.fn();
    const staying = jest.fn();
    const unsubscribeGone = bus.subscribe('inv_a', gone);
    const unsubscribeStaying = bus.subscribe('inv_a', staying);
    unsubscribeGone();
    expect(bus.waitingIds).toBe(1);
    await bus.publish('inv_a');
    expect(gone).not.toHaveBeenCalled();
    expect(staying).toHaveBeenCalledTimes(1);

    bus.subscribe('inv_b', jest.fn())();
    expect(bus.waitingIds).toBe(0);
    unsubscribeStaying(); // after publish: harmless
    unsubscribeStaying();
    expect(bus.waitingIds).toBe(0);
  });

  it('publishes an id nobody waits for without error', async () => {
    await expect(bus.publish('inv_nobody')).resolves.toBeUndefined();
    expect(bus.waitingIds).toBe(0);
  });

  it('keeps a subscription made after a publish for the next publish', async () => {
    await bus.publish('inv_a');
    const listener = jest.fn();
    bus.subscribe('inv_a', listener);
    expect(listener).not.toHaveBeenCalled();
    await bus.publish('inv_a');
    expect(listener).toHaveBeenCalledTimes(1);
  });
});
