import { BodyTimeoutError, ClientGoneError, PayloadTooLargeError } from '../../errors/webhook-trigger.errors.js';
import type { DeferredBody } from '../http.types.js';

/**
 * Reads a deferred body: at most `maxBytes` (a declared Content-Length over it is refused before any
 * byte is read, a body that grows past it as soon as it does) and within `timeoutMs`. Stops reading on
 * any refusal; the answer then closes the connection (see the exception filter), so the rest of the
 * body is never read. A client that goes away mid-body rejects with `ClientGoneError` (not an error of ours).
 */
export function readBody(body: DeferredBody, maxBytes: number, timeoutMs: number): Promise<Buffer> {
  const declared = body.contentLength === undefined ? NaN : Number(body.contentLength);
  if (declared > maxBytes) return Promise.reject(new PayloadTooLargeError(maxBytes));
  const { stream } = body;
  if (stream.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error: Error | null) => {
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onGone);
      stream.off('aborted', onGone);
      stream.off('close', onClose);
      if (error) {
        stream.pause();
        reject(error);
      } else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return finish(new PayloadTooLargeError(maxBytes));
      chunks.push(chunk);
    };
    const onEnd = () => finish(null);
    const onGone = () => finish(new ClientGoneError());
    // 'close' before 'end' means the connection went away mid-body.
    const onClose = () => finish(new ClientGoneError());
    const timer = setTimeout(() => finish(new BodyTimeoutError(timeoutMs)), timeoutMs);
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onGone);
    stream.on('aborted', onGone);
    stream.on('close', onClose);
    stream.resume();
  });
}
