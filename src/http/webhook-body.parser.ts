import type { BotInputs } from '../bots/bot.types.js';
import { InvalidRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../errors/webhook-trigger.errors.js';
import { BODY_MALFORMED, BODY_NOT_OBJECT } from '../errors/webhook-trigger.messages.js';
import type { CapturedBody } from './http.types.js';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** Turns the captured bytes into bot inputs, or the 415/413/400 the caller deserves. */
export function parseTriggerBody(body: CapturedBody | undefined, limit: number): BotInputs {
  if (!body) throw new InvalidRequestError(BODY_NOT_OBJECT);
  if (!body.contentType || !JSON_TYPE.test(body.contentType)) throw new UnsupportedMediaTypeError(body.contentType);
  if (body.tooLarge || !body.bytes) throw new PayloadTooLargeError(limit);
  let value: unknown;
  try {
    value = JSON.parse(body.bytes.toString('utf8'));
  } catch {
    throw new InvalidRequestError(BODY_MALFORMED);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidRequestError(BODY_NOT_OBJECT);
  return value as BotInputs;
}
