import { BlockList, isIP } from 'node:net';
import {
  CALLBACK_URL_ADDRESS_REFUSED,
  CALLBACK_URL_CREDENTIALS,
  CALLBACK_URL_LOOPBACK_NAME,
  CALLBACK_URL_NO_HOST,
  CALLBACK_URL_NOT_ABSOLUTE,
  CALLBACK_URL_REQUIRED,
  CALLBACK_URL_SCHEME,
  CALLBACK_URL_TOO_LONG,
} from '../errors/webhook-trigger.messages.js';

// Which addresses a callback may reach (SSRF protection): only public unicast ones. Everything below is refused
// unless the host is named in allowedHosts. Ranges from the IANA special-purpose registries (RFC 6890 and after).

const RANGES: Array<[kind: string, cidrs: string[]]> = [
  ['unspecified', ['0.0.0.0/8', '::/128']],
  ['loopback', ['127.0.0.0/8', '::1/128']],
  ['private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']],
  // 169.254.169.254 (cloud metadata) is in here.
  ['link-local', ['169.254.0.0/16', 'fe80::/10']],
  ['shared (CGNAT)', ['100.64.0.0/10']],
  ['multicast', ['224.0.0.0/4', 'ff00::/8']],
  [
    'reserved',
    [
      '192.0.0.0/24', // IETF protocol assignments
      '192.0.2.0/24', // documentation (TEST-NET-1)
      '198.51.100.0/24', // TEST-NET-2
      '203.0.113.0/24', // TEST-NET-3
      '192.88.99.0/24', // 6to4 relay anycast
      '198.18.0.0/15', // benchmarking
      '240.0.0.0/4', // reserved, and the broadcast 255.255.255.255
      '::/96', // IPv4-compatible (deprecated)
      '::ffff:0:0:0/96', // IPv4-translated
      '64:ff9b:1::/48', // local-use IPv4/IPv6 translation
      '100::/64', // discard-only
      '2001::/23', // IETF protocol assignments: Teredo, ORCHID, benchmarking…
      '2001:db8::/32', // documentation
      '2002::/16', // 6to4: reaches an IPv4 address of anyone's choosing
      'fec0::/10', // site-local (deprecated)
      '3fff::/20', // documentation
    ],
  ],
];

const LISTS = RANGES.map(([kind, cidrs]) => {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [network, prefix] = cidr.split('/') as [string, string];
    list.addSubnet(network, Number(prefix), isIP(network) === 6 ? 'ipv6' : 'ipv4');
  }
  return [kind, list] as const;
});

/** The 16 bytes of an IPv6 address (already known valid). */
function ipv6Bytes(address: string): number[] {
  let text = address;
  const tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    tail.push(...v4[1].split('.').map(Number));
    text = text.slice(0, -v4[1].length) + '0:0';
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const groups = (part: string | undefined) => (part ? part.split(':').filter((g) => g !== '') : []);
  const left = groups(head);
  const right = groups(rest);
  const words = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right].map((g) => parseInt(g, 16));
  const bytes = words.flatMap((w) => [w >> 8, w & 0xff]);
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

/** The IPv4 address an IPv6 one carries and is routed to: IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::/96). */
function embeddedIpv4(address: string): string | undefined {
  const b = ipv6Bytes(address);
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const mapped = zeros(0, 10) && b[10] === 0xff && b[11] === 0xff;
  const nat64 = b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12);
  return mapped || nat64 ? b.slice(12).join('.') : undefined;
}

/**
 * Why `address` (an IP literal, without brackets) must not be called: "loopback", "private", "link-local"…, or
 * null for a public unicast address. An IPv6 address carrying an IPv4 one is judged by the IPv4 one.
 */
export function refusedAddressKind(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return 'invalid';
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== undefined) return refusedAddressKind(v4);
  }
  const type = family === 6 ? 'ipv6' : 'ipv4';
  for (const [kind, list] of LISTS) if (list.check(address, type)) return kind;
  return null;
}

/** The host of a URL as compared and resolved: lower case, without IPv6 brackets. */
export function urlHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}

/** Whether `host` is named in `allowedHosts` (exact match, case-insensitive; IPv6 with or without brackets). */
export function isAllowedHost(host: string, allowedHosts: readonly string[] | undefined): boolean {
  return (allowedHosts ?? []).some(
    (allowed) =>
      allowed
        .trim()
        .replace(/^\[(.*)\]$/, '$1')
        .toLowerCase() === host,
  );
}

const CALLBACK_URL_MAX_LENGTH = 2048;

/**
 * Checks a callback URL before it is stored (the admin answers 400 with the message): http or https, at most
 * 2048 characters, a host, no user or password in it; an IP literal, or `localhost`, that is not public is
 * refused unless the host is in `allowedHosts`. Returns the problem, or null when the URL may be stored. A name is
 * not resolved here: the sender checks every address it resolves to, at each delivery.
 */
export function checkCallbackUrl(url: unknown, allowedHosts?: readonly string[]): string | null {
  if (typeof url !== 'string' || url.trim() === '') return CALLBACK_URL_REQUIRED;
  if (url.length > CALLBACK_URL_MAX_LENGTH) return CALLBACK_URL_TOO_LONG(CALLBACK_URL_MAX_LENGTH);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return CALLBACK_URL_NOT_ABSOLUTE;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return CALLBACK_URL_SCHEME(parsed.protocol.replace(/:$/, ''));
  }
  if (parsed.username || parsed.password) return CALLBACK_URL_CREDENTIALS;
  const host = urlHost(parsed);
  if (!host) return CALLBACK_URL_NO_HOST;
  if (isAllowedHost(host, allowedHosts)) return null;
  if (host === 'localhost' || host.endsWith('.localhost')) {
    return CALLBACK_URL_LOOPBACK_NAME(host);
  }
  if (isIP(host)) {
    const kind = refusedAddressKind(host);
    if (kind) return CALLBACK_URL_ADDRESS_REFUSED(host, kind);
  }
  return null;
}
