import { BlockList, isIP } from 'node:net';
import { IpNotAllowedError } from '../errors/webhook-trigger.errors.js';

/** Most entries one trigger's allow-list holds. */
export const ALLOWED_IPS_MAX = 100;

/** `::ffff:203.0.113.5` (an IPv4 client on a dual-stack socket) is `203.0.113.5`. */
const IPV4_MAPPED = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

interface Entry {
  address: string;
  family: 'ipv4' | 'ipv6';
  prefix: number | null;
}

/** An address or CIDR as the allow-list reads it, or null when it is neither. IPv4-mapped IPv6 entries become IPv4. */
function parseEntry(text: string): Entry | null {
  const [address, prefixText, extra] = text.split('/');
  if (extra !== undefined || (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText))) return null;
  const mapped = IPV4_MAPPED.exec(address);
  const version = isIP(address);
  if (version === 0) return null;
  const prefix = prefixText === undefined ? null : Number(prefixText);
  if (prefix !== null && prefix > (version === 4 ? 32 : 128)) return null;
  if (mapped) {
    if (prefix !== null && prefix < 96) return { address, family: 'ipv6', prefix };
    return { address: mapped[1], family: 'ipv4', prefix: prefix === null ? null : prefix - 96 };
  }
  return { address, family: version === 4 ? 'ipv4' : 'ipv6', prefix };
}

/**
 * The first entry that is not an address or CIDR (IPv4 or IPv6), or null when every one is; what the admin
 * checks before storing a list, so the guard only ever reads good entries.
 */
export function badAllowedIp(entries: readonly unknown[]): string | null {
  const bad = entries.findIndex((e) => typeof e !== 'string' || e.length > 64 || parseEntry(e) === null);
  return bad === -1 ? null : String(entries[bad]);
}

/** One BlockList per stored list (a cached trigger keeps its array, so it is built once per trigger change). */
const compiled = new WeakMap<readonly string[], BlockList>();

function blockListOf(entries: readonly string[]): BlockList {
  let list = compiled.get(entries);
  if (list) return list;
  list = new BlockList();
  for (const entry of entries.map(parseEntry)) {
    if (!entry) continue; // never stored: the admin refuses it
    if (entry.prefix === null) list.addAddress(entry.address, entry.family);
    else list.addSubnet(entry.address, entry.prefix, entry.family);
  }
  compiled.set(entries, list);
  return list;
}

/**
 * Refuses (403) a request whose address is not on the trigger's allow-list; a trigger without one lets every
 * address in. `ip` is the address the host trusts: `request.ip` as Express (`trust proxy`) and Fastify
 * (`trustProxy`) compute it, never a header read here.
 */
export function assertIpAllowed(allowedIps: readonly string[] | undefined, ip: string): void {
  if (!allowedIps?.length) return;
  const mapped = IPV4_MAPPED.exec(ip);
  const address = mapped ? mapped[1] : ip;
  const version = isIP(address);
  if (version === 0 || !blockListOf(allowedIps).check(address, version === 4 ? 'ipv4' : 'ipv6')) throw new IpNotAllowedError(ip);
}
