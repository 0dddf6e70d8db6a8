import type { BotOutput } from '../bots/bot.types.js';
import { INVALID_EMITTED_OUTPUT, OUTPUTS_TOO_LARGE } from '../errors/webhook-trigger.messages.js';
import type { InvocationError } from '../persistence/records.js';

export const isValidOutput = (o: unknown): o is BotOutput =>
  typeof o === 'object' && o !== null && typeof (o as BotOutput).title === 'string' && typeof (o as BotOutput).message === 'string';

/** JSON bytes of an array of outputs whose elements have `elementBytes` in all. */
const arrayBytes = (count: number, elementBytes: number) => 2 + elementBytes + Math.max(0, count - 1);

/**
 * The outputs a running bot emitted through `ctx.emit()`, made only when it first emits (a bot that never
 * emits costs nothing more). Each accepted output is checked and counted against `maxOutputBytes` at
 * once, then stored by one conditional append, in order (one write at a time, chained); `end()` stops
 * accepting and waits for the writes in flight, so the run's final write comes after them.
 */
export class RunOutputs {
  /** The run's outputs so far, in order: those stored before this claim (a retried run's), then the accepted ones. */
  readonly list: BotOutput[];
  /** How many of `list` are settled (stored before, or their write done and kept): the place of the next to store. */
  private settled: number;
  private elementBytes: number;
  private writes: Promise<unknown> = Promise.resolve();
  private ended = false;

  constructor(
    before: BotOutput[],
    private readonly maxBytes: number,
    private readonly signal: AbortSignal,
    /** Stores one output; `index` is its place among the run's outputs (0-based, earlier attempts' included). */
    private readonly store: (output: BotOutput, index: number) => Promise<boolean>,
    private readonly fail: (error: InvocationError) => void,
    private readonly onStoreError: (error: unknown) => void,
  ) {
    this.list = [...before];
    this.settled = before.length;
    this.elementBytes = before.reduce((sum, o) => sum + Buffer.byteLength(JSON.stringify(o)), 0);
  }

  emit(output: unknown): Promise<boolean> {
    if (this.ended || this.signal.aborted) return Promise.resolve(false);
    if (!isValidOutput(output)) {
      this.fail({ message: INVALID_EMITTED_OUTPUT, code: 'invalid_outputs' });
      return Promise.resolve(false);
    }
    const clean = { title: output.title, message: output.message };
    const bytes = Buffer.byteLength(JSON.stringify(clean));
    const total = arrayBytes(this.list.length + 1, this.elementBytes + bytes);
    if (total > this.maxBytes) {
      this.fail({ message: OUTPUTS_TOO_LARGE(total, this.maxBytes), code: 'outputs_too_large' });
      return Promise.resolve(false);
    }
    this.list.push(clean);
    this.elementBytes += bytes;
    const stored = this.writes.then(() => {
      // Every earlier write has settled (they are chained): this output is at list[index], without a search.
      const index = this.settled;
      return this.store(clean, index).then(
        (ok) => {
          this.settled++;
          return ok;
        },
        (error: unknown) => {
          // Not stored: take it out again, so the list stays what the row holds (and the positions the
          // run's event stream numbers by stay exact).
          this.list.splice(index, 1);
          this.elementBytes -= bytes;
          this.onStoreError(error);
          return false;
        },
      );
    });
    this.writes = stored;
    return stored;
  }

  /** No more outputs are accepted; resolves once the writes in flight are done. */
  async end(): Promise<void> {
    this.ended = true;
    await this.writes;
  }
}

/** A bot's returned value is an array of valid outputs. */
export const isValidOutputs = (value: unknown): value is BotOutput[] => Array.isArray(value) && value.every(isValidOutput);

/** Keeps exactly title and message, so a bot cannot leak extra fields into responses by accident. */
export const cleanOutputs = (outputs: BotOutput[]): BotOutput[] => outputs.map(({ title, message }) => ({ title, message }));
