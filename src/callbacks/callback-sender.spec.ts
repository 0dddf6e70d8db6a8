import type { LookupAddress } from 'node:dns';
import type { LookupOptions } from 'node:dns';
import { createSocket } from 'node:dgram';
import { checkResolvedAddresses, parseRetryAfter, pinnedLookup, resolvePublicName, sendCallback } from './callback-sender.js';

type Looked = { error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number };

/** Calls a lookup function as net.connect does, with `all` (autoSelectFamily) or without. */
function look(lookup: ReturnType<typeof pinnedLookup>, hostname: string, options: LookupOptions): Promise<Looked> {
  return new Promise((resolve) => {
    lookup(hostname, options, (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) =>
      resolve({ error, address, family }),
    );
  });
}

const PUBLIC: LookupAddress[] = [
  { address: '93.184.215.14', family: 4 },
  { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
];

describe('pinnedLookup', () => {
  it('answers the addresses it was given, never asking DNS, in both of the forms net.connect asks for', async () => {
    const lookup = pinnedLookup('hooks.example.com', PUBLIC, false);
    expect(await look(lookup, 'hooks.example.com', { all: true })).toEqual({ error: null, address: PUBLIC, family: undefined });
    expect(await look(lookup, 'hooks.example.com', {})).toEqual({ error: null, address: '93.184.215.14', family: 4 });
    expect(await look(lookup, 'hooks.example.com', { family: 6 })).toEqual({ error: null, address: PUBLIC[1].address, family: 6 });
  });

  it('refuses another host name, and addresses that are not public (checked again at connect)', async () => {
    const other = await look(pinnedLookup('hooks.example.com', PUBLIC, false), 'evil.example.com', {});
    expect(other.error?.message).toMatch(/unexpected lookup of evil.example.com/);
    const rebound = await look(
      pinnedLookup('hooks.example.com', [...PUBLIC, { address: '10.0.0.7', family: 4 }], false),
      'hooks.example.com',
      {
        all: true,
      },
    );
    expect(rebound.error?.message).toMatch(/resolves to 10.0.0.7, which is a private address/);
  });

  it('lets an allowed host reach a private address', async () => {
    const lookup = pinnedLookup('receiver.test', [{ address: '127.0.0.1', family: 4 }], true);
    expect(await look(lookup, 'receiver.test', {})).toEqual({ error: null, address: '127.0.0.1', family: 4 });
  });
});

describe('checkResolvedAddresses', () => {
  it('refuses the host when ANY address it resolves to is not public', () => {
    expect(checkResolvedAddresses('a.example', PUBLIC, false)).toEqual(PUBLIC);
    expect(() => checkResolvedAddresses('a.example', [PUBLIC[0], { address: '::1', family: 6 }], false)).toThrow(
      /::1, which is a loopback/,
    );
    expect(() => checkResolvedAddresses('a.example', [{ address: '169.254.169.254', family: 4 }], false)).toThrow(/link-local/);
    expect(() => checkResolvedAddresses('a.example', [], false)).toThrow(/no address/);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-22T10:00:00Z');
  it('reads seconds and HTTP dates, in whole seconds from now', () => {
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:01:30 GMT', now)).toBe(90);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
  });
});

describe('sendCallback refusals (nothing is sent)', () => {
  it('refuses a bad URL or a literal private address before any connection', async () => {
    for (const url of ['ftp://example.com/', 'http://127.0.0.1:1/', 'http://[::1]:1/', 'http://169.254.169.254/', 'http://10.0.0.1/']) {
      const result = await sendCallback({ url, headers: {}, body: '{}' });
      expect(result).toMatchObject({ ok: false, outcome: 'refused' });
      expect(result.status).toBeUndefined();
    }
  });

  it('refuses a name that resolves to a private address, with the address in the message', async () => {
    const resolve = jest.fn(async () => [{ address: '10.1.2.3', family: 4 }]);
    const result = await sendCallback({ url: 'https://hooks.example.com/x', headers: {}, body: '{}', resolve });
    expect(result).toMatchObject({ ok: false, outcome: 'refused' });
    expect(result.error).toBe(
      'The callback host "hooks.example.com" resolves to 10.1.2.3, which is a private address; only public addresses are called unless the host is in allowedHosts',
    );
    expect(resolve).toHaveBeenCalledWith('hooks.example.com');
  });

  it('fails (to retry later) when the name does not resolve', async () => {
    const result = await sendCallback({
      url: 'https://nowhere.example/x',
      headers: {},
      body: '{}',
      resolve: async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.example'), { code: 'ENOTFOUND' });
      },
    });
    expect(result).toMatchObject({ ok: false, outcome: 'failed' });
    expect(result.error).toMatch(/ENOTFOUND/);
  });
});

/**
 * A DNS server on a local UDP port: answers A queries with `a` (AAAA with no record), or never answers when `a` is
 * null. Counts the queries it got.
 */
async function dnsServer(a: string | null): Promise<{ server: string; queries: () => number; close(): Promise<void> }> {
  const socket = createSocket('udp4');
  let queries = 0;
  socket.on('message', (query, from) => {
    queries++;
    if (a === null) return;
    let end = 12; // the question's name: labels up to a zero byte, then its type and class
    while (query[end] !== 0) end += query[end] + 1;
    const question = query.subarray(12, end + 5);
    const isA = query.readUInt16BE(end + 1) === 1;
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2); // the query's id
    header.writeUInt16BE(0x8180, 2); // a response, recursion available, no error
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(isA ? 1 : 0, 6);
    const answer = Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ...a.split('.').map(Number)]);
    socket.send(Buffer.concat([header, question, ...(isA ? [answer] : [])]), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    server: `127.0.0.1:${socket.address().port}`,
    queries: () => queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

describe('resolvePublicName (a name a tenant chose)', () => {
  it('asks DNS for the addresses of both families', async () => {
    const dns = await dnsServer('93.184.215.14');
    try {
      const addresses = await resolvePublicName('hooks.example.com', new AbortController().signal, [dns.server]);
      expect(addresses).toEqual([{ address: '93.184.215.14', family: 4 }]);
      expect(dns.queries()).toBe(2); // A and AAAA
    } finally {
      await dns.close();
    }
  });

  it('gives up at once when the attempt is over, however long its DNS would take: nothing is left waiting', async () => {
    const dns = await dnsServer(null);
    try {
      const over = new AbortController();
      const started = performance.now();
      const resolved = resolvePublicName('never.example.com', over.signal, [dns.server]);
      setTimeout(() => over.abort(), 100);
      await expect(resolved).rejects.toMatchObject({ code: 'ECANCELLED' });
      expect(performance.now() - started).toBeLessThan(1_000); // its own retries would take 2 s and more
      const asked = dns.queries();
      await new Promise((r) => setTimeout(r, 2_500));
      expect(dns.queries()).toBe(asked); // no query was tried again once it was cancelled
    } finally {
      await dns.close();
    }
  });
});
