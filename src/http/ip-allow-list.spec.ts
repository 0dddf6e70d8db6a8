import { IpNotAllowedError } from '../errors/webhook-trigger.errors.js';
import { assertIpAllowed, badAllowedIp } from './ip-allow-list.js';

describe('IP allow-list', () => {
  const list = ['203.0.113.0/24', '198.51.100.7', '2001:db8::/32', '::1'];
  const allowed = (ip: string, entries: string[] | undefined = list) => {
    try {
      assertIpAllowed(entries, ip);
      return true;
    } catch (error) {
      if (error instanceof IpNotAllowedError) return false;
      throw error;
    }
  };

  it.each([
    ['203.0.113.5', true],
    ['203.0.114.5', false],
    ['198.51.100.7', true],
    ['198.51.100.8', false],
    ['::ffff:203.0.113.5', true],
    ['::FFFF:198.51.100.7', true],
    ['::ffff:10.0.0.1', false],
    ['2001:db8:1::5', true],
    ['2001:db9::5', false],
    ['::1', true],
    ['unknown', false],
  ])('%s → %s', (ip, expected) => {
    expect(allowed(ip)).toBe(expected);
  });

  it('lets every address in without a list or with an empty one', () => {
    expect(() => assertIpAllowed(undefined, '192.0.2.1')).not.toThrow();
    expect(allowed('192.0.2.1', [])).toBe(true);
  });

  it('reads an IPv4-mapped entry as its IPv4 address or subnet', () => {
    expect(allowed('192.0.2.9', ['::ffff:192.0.2.0/120'])).toBe(true);
    expect(allowed('192.0.3.9', ['::ffff:192.0.2.0/120'])).toBe(false);
    expect(allowed('::ffff:192.0.2.1', ['::ffff:192.0.2.1'])).toBe(true);
  });

  it('names the address it refused, as the host saw it', () => {
    expect(() => assertIpAllowed(list, '192.0.2.1')).toThrow('This trigger does not accept requests from 192.0.2.1');
  });

  it('finds the first entry that is not an address or CIDR', () => {
    expect(badAllowedIp(list)).toBeNull();
    expect(badAllowedIp(['10.0.0.0/8', '10.0.0.0/33'])).toBe('10.0.0.0/33');
    for (const bad of [
      '300.1.1.1',
      '10.0.0.0/',
      '10.0.0.0/8/8',
      '2001:db8::/129',
      'example.com',
      '',
      ' 10.0.0.1',
      '10.0.0.1/-1',
      '10.0.0.0/8a',
    ]) {
      expect(badAllowedIp([bad])).toBe(bad);
    }
  });
});
