import type { Readable } from 'node:stream';
import type { CapturedBody, RawRequest } from '../http.types.js';

/** Buffers up to `limit` bytes; past that it keeps draining (so the connection can answer) but stores nothing. */
export function readBody(stream: Readable | RawRequest, limit: number, contentType = (stream as RawRequest).headers?.['content-type']): Promise<CapturedBody> {
  const declared = Number((stream as RawRequest).headers?.['content-length']);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = Number.isFinite(declared) && declared > limit;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLarge = true;
      if (!tooLarge) chunks.push(chunk);
    });
    stream.on('end', () => resolve({ contentType, bytes: tooLarge ? null : Buffer.concat(chunks, size), tooLarge }));
    stream.on('error', reject);
  });
}
