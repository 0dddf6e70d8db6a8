import { ProcessFullError, ShareHeldError } from '../errors/webhook-trigger.errors.js';
import { HeldShares } from './held-shares.js';

const caps = { total: 5, perTrigger: 2, perAccount: 3 };
const refusals = { ofTrigger: 'the trigger holds 2', ofAccount: 'the account holds 3', ofProcess: 'the process holds 5' };
const a1 = { id: 'trg_a1', accountId: 'a' };
const a2 = { id: 'trg_a2', accountId: 'a' };
const b1 = { id: 'trg_b1', accountId: 'b' };
const c1 = { id: 'trg_c1', accountId: 'c' };

describe('HeldShares', () => {
  it('refuses a trigger at its cap, an account at its cap and the process at its cap, each apart', () => {
    const shares = new HeldShares(caps, refusals);
    shares.take(a1);
    shares.take(a1);
    expect(() => shares.take(a1)).toThrow(ShareHeldError);
    shares.take(a2);
    // The account holds 3: its other trigger is refused too, another account is not.
    expect(() => shares.take(a2)).toThrow(new ShareHeldError('the account holds 3'));
    shares.take(b1);
    shares.take(c1);
    expect(shares.count).toBe(5);
    expect(() => shares.take({ id: 'trg_d1', accountId: 'd' })).toThrow(new ProcessFullError('the process holds 5'));
  });

  it('gives a slot back once, however often its release is called', () => {
    const shares = new HeldShares(caps, refusals);
    const release = shares.take(a1);
    shares.take(a1);
    release();
    release();
    expect(shares.count).toBe(1);
    shares.take(a1);
    expect(() => shares.take(a1)).toThrow(ShareHeldError);
  });
});
