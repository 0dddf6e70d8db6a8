import { INVOCATION_ID_PATTERN, newInvocationId } from './ids.js';

/** The 16 bytes an id's 22 characters hold (decoded with the ASCII-ordered alphabet). */
function bytesOf(id: string): Buffer {
  const alphabet = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';
  let bits = '';
  for (const char of id.slice(4)) bits += alphabet.indexOf(char).toString(2).padStart(6, '0');
  return Buffer.from(Array.from({ length: 16 }, (_, i) => parseInt(bits.slice(i * 8, i * 8 + 8), 2)));
}

describe('newInvocationId', () => {
  it('answers the documented shape: inv_ and 22 base64url characters', () => {
    for (let i = 0; i < 1_000; i++) expect(newInvocationId()).toMatch(INVOCATION_ID_PATTERN);
  });

  it('holds the creation time in its first 6 bytes and sorts by it, whatever the random part', () => {
    const times = [0, 1, 255, 256, 1_700_000_000_000, 1_764_000_000_000, 1_764_000_000_001, 2 ** 47];
    const ids = times.map((t) => newInvocationId(t));
    for (const [i, id] of ids.entries()) expect(bytesOf(id).readUIntBE(0, 6)).toBe(times[i]);
    // Made in a shuffled order, a later time still sorts after an earlier one (string comparison, as an index does).
    const shuffled = [...times].reverse().map((t) => newInvocationId(t));
    expect([...shuffled].sort()).toEqual([...shuffled].reverse());
  });

  it('keeps 80 random bits: ids of the same millisecond differ and spread over the whole range', () => {
    const ids = Array.from({ length: 10_000 }, () => newInvocationId(1_764_000_000_000));
    expect(new Set(ids).size).toBe(ids.length);
    const firstRandomByte = new Set(ids.map((id) => bytesOf(id)[6]));
    expect(firstRandomByte.size).toBe(256);
  });

  it('places a time out of range at the nearest end instead of failing the request', () => {
    expect(bytesOf(newInvocationId(-5)).readUIntBE(0, 6)).toBe(0);
    expect(bytesOf(newInvocationId(2 ** 49)).readUIntBE(0, 6)).toBe(2 ** 48 - 1);
    expect(newInvocationId(1.5)).toMatch(INVOCATION_ID_PATTERN);
  });
});
