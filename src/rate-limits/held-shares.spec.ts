import { TooManyEventStreamsError, TooManyEventStreamsOfError } from '../errors/webhook-trigger.errors.js';
import { HeldShares } from './held-shares.js';

const caps = { total: 5, perTrigger: 2, perAccount: 3 };
const refusals = {
  ofTrigger: () => new TooManyEventStreamsOfError('trigger', 2),
  ofAccount: () => new TooManyEventStreamsOfError('account', 3),
  ofProcess: () => new TooManyEventStreamsError(5),
};
const a1 = { id: 'trg_a1', accountId: 'a' };
const a2 = { id: 'trg_a2', accountId: 'a' };
const b1 = { id: 'trg_b1', accountId: 'b' };
const c1 = { id: 'trg_c1', accountId: 'c' };

describe('HeldShares', () => {
  it('refuses a trigger at its cap, an account at its cap and the process at its cap, each apart', () => {
    const shares = new HeldShares(caps, refusals);
    shares.take(a1);
    shares.take(a1);
    expect(() => shares.take(a1)).toThrow(TooManyEventStreamsOfError);
    shares.take(a2);
    // The account holds 3: its other trigger is refused too, another account is not.
    expect(() => shares.take(a2)).toThrow(/account/);
    shares.take(b1);
    shares.take(c1);
    expect(shares.count).toBe(5);
    expect(() => shares.take({ id: 'trg_d1', accountId: 'd' })).toThrow(TooManyEventStreamsError);
  });

  it('gives a slot back once, however often its release is called', () => {
    const shares = new HeldShares(caps, refusals);
    const release = shares.take(a1);
    shares.take(a1);
    release();
    release();
    expect(shares.count).toBe(1);
    shares.take(a1);
    expect(() => shares.take(a1)).toThrow(TooManyEventStreamsOfError);
  });
});
