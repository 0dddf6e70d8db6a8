import type { BotInputs } from '../bots/bot.types.js';
import { InvalidRequestError, UnsupportedMediaTypeError } from '../errors/webhook-trigger.errors.js';
import { BODY_MALFORMED, BODY_NOT_OBJECT, BODY_TOO_DEEP } from '../errors/webhook-trigger.messages.js';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** 415 unless the Content-Type is JSON: decided from the header, before any byte is read. */
export function checkJsonContentType(contentType: string | undefined): void {
  if (!contentType || !JSON_TYPE.test(contentType)) throw new UnsupportedMediaTypeError(contentType);
}

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * True when the JSON text nests arrays/objects deeper than `max`: one pass over the bytes, outside
 * strings, before anything is parsed. Deep nesting is cheap to send and costly to handle (a recursive
 * walk over it overflows the stack), so it is refused up front.
 */
export function nestsDeeperThan(bytes: Buffer, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) depth--;
  }
  return false;
}

/** Turns the body's bytes into bot inputs, or the 400 the caller deserves. */
export function parseTriggerBody(bytes: Buffer, maxDepth: number): BotInputs {
  if (nestsDeeperThan(bytes, maxDepth)) throw new InvalidRequestError(BODY_TOO_DEEP(maxDepth));
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new InvalidRequestError(BODY_MALFORMED);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidRequestError(BODY_NOT_OBJECT);
  return value as BotInputs;
}
