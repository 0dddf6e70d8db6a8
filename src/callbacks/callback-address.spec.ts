import { checkCallbackUrl, refusedAddressKind } from './callback-address.js';

describe('refusedAddressKind', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['169.254.0.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.127.255.255', 'shared (CGNAT)'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['2002:7f00:1::', 'reserved'],
    ['2001::1', 'reserved'],
    ['fec0::1', 'reserved'],
    ['::7f00:1', 'reserved'],
    // IPv6 carrying an IPv4 address is judged by the IPv4 one.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['0:0:0:0:0:ffff:10.0.0.1', 'private'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['not an address', 'invalid'],
  ])('%s is %s', (address, kind) => {
    expect(refusedAddressKind(address)).toBe(kind);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '172.32.0.1',
    '100.128.0.1',
    '169.255.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
  ])('%s is public', (address) => {
    expect(refusedAddressKind(address)).toBeNull();
  });
});

describe('checkCallbackUrl', () => {
  it('accepts public http and https URLs', () => {
    expect(checkCallbackUrl('https://example.com/hooks/run?x=1')).toBeNull();
    expect(checkCallbackUrl('http://example.com:8080/')).toBeNull();
    expect(checkCallbackUrl('https://93.184.215.14/')).toBeNull();
  });

  it.each([
    [undefined, 'a URL is required'],
    ['', 'a URL is required'],
    ['example.com/hook', 'not an absolute URL'],
    ['ftp://example.com/', 'the scheme must be http or https, not ftp'],
    ['file:///etc/passwd', 'the scheme must be http or https, not file'],
    ['javascript:alert(1)', 'the scheme must be http or https'],
    ['https://user:pw@example.com/', 'credentials in the URL are not allowed'],
    ['https://user@example.com/', 'credentials in the URL are not allowed'],
    [`https://example.com/${'a'.repeat(2048)}`, 'longer than 2048 characters'],
    ['http://127.0.0.1:3000/', '127.0.0.1 is a loopback address'],
    ['http://2130706433/', '127.0.0.1 is a loopback address'],
    ['http://0x7f.1/', '127.0.0.1 is a loopback address'],
    ['http://[::1]/', '::1 is a loopback address'],
    ['http://[::ffff:127.0.0.1]/', 'loopback address'],
    ['http://10.0.0.1/', '10.0.0.1 is a private address'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 is a link-local address'],
    ['http://0.0.0.0/', 'unspecified address'],
    ['http://localhost:3000/', '"localhost" is a loopback name'],
    ['http://api.localhost/', '"api.localhost" is a loopback name'],
  ])('refuses %s', (url, problem) => {
    const message = checkCallbackUrl(url);
    expect(message).toMatch(/^Invalid callback URL: /);
    expect(message).toContain(problem);
  });

  it('opens hosts named in allowedHosts (exact, case-insensitive, IPv6 with or without brackets)', () => {
    expect(checkCallbackUrl('http://127.0.0.1:3000/hook', ['127.0.0.1'])).toBeNull();
    expect(checkCallbackUrl('http://LocalHost:3000/hook', ['localhost'])).toBeNull();
    expect(checkCallbackUrl('http://[::1]:3000/hook', ['[::1]'])).toBeNull();
    expect(checkCallbackUrl('http://[::1]:3000/hook', ['::1'])).toBeNull();
    // Allowing an address does not allow the names that resolve to it, nor other addresses.
    expect(checkCallbackUrl('http://localhost/', ['127.0.0.1'])).toContain('loopback name');
    expect(checkCallbackUrl('http://127.0.0.2/', ['127.0.0.1'])).toContain('loopback address');
    // Scheme and credentials rules still hold for allowed hosts.
    expect(checkCallbackUrl('ftp://127.0.0.1/', ['127.0.0.1'])).toContain('scheme');
    expect(checkCallbackUrl('http://a:b@127.0.0.1/', ['127.0.0.1'])).toContain('credentials');
  });
});
