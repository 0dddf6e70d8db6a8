/**
 * What `main()` answers, or undefined as soon as the signal fires (the caller reads the signal): what lets a run
 * end even if its bot ignores the signal. One promise, not a race of two. The executor's, and runBot's (the kit
 * judges main() as a run is judged).
 */
export function untilAborted<T>(signal: AbortSignal, main: () => T | Promise<T>): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    const settle = () => signal.removeEventListener('abort', onAbort);
    if (signal.aborted) onAbort();
    try {
      // A plain (not async) main() may answer its outputs directly: Promise.resolve hands a promise back as it is.
      Promise.resolve(main()).then(
        (value) => (settle(), resolve(value)),
        (error: unknown) => (settle(), reject(error)),
      );
    } catch (error) {
      settle();
      reject(error);
    }
  });
}
