/**
 * Most characters of a failed run's stored error message. A bot's thrown message is stored with the run,
 * read by every history page, the run's detail, the sync answer and the callback; one key holder whose bot
 * throws megabytes would otherwise make each of those megabytes for everyone who lists the bot's runs.
 */
export const MAX_ERROR_MESSAGE_CHARS = 4096;

/** What follows a cut message, so a reader knows it was longer. */
const CUT_MARK = ' … (message cut)';

/** The message of what a bot threw, cut to `MAX_ERROR_MESSAGE_CHARS` (never inside a surrogate pair). */
export function boundedErrorMessage(thrown: unknown): string {
  let message: string;
  try {
    message = thrown instanceof Error ? String(thrown.message) : String(thrown);
  } catch {
    message = 'the bot threw a value that cannot be read as text';
  }
  if (message.length <= MAX_ERROR_MESSAGE_CHARS) return message;
  let end = MAX_ERROR_MESSAGE_CHARS - CUT_MARK.length;
  const last = message.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1; // a high surrogate whose pair would be cut off
  return message.slice(0, end) + CUT_MARK;
}

/** A run's claim (`queued → running`) met an error (a database's): the run may still be queued, to be dispatched again. */
export class RunClaimError extends Error {
  constructor(
    readonly invocationId: string,
    override readonly cause: unknown,
  ) {
    super(`Run ${invocationId} could not be claimed: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}
