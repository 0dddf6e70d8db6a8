import { BadRequestException, HttpStatus, HttpException, PayloadTooLargeException } from '@nestjs/common';
import type { BotInputs } from '../bots/bot.types.js';
import { BODY_MALFORMED, BODY_NOT_JSON_TYPE, BODY_NOT_OBJECT, BODY_TOO_LARGE } from '../errors/webhook-trigger.messages.js';
import type { CapturedBody } from './http.types.js';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** Turns the captured bytes into bot inputs, or the 415/413/400 the caller deserves. */
export function parseTriggerBody(body: CapturedBody | undefined, limit: number): BotInputs {
  if (!body) throw new BadRequestException(BODY_NOT_OBJECT);
  if (!body.contentType || !JSON_TYPE.test(body.contentType)) {
    throw new HttpException(BODY_NOT_JSON_TYPE(body.contentType), HttpStatus.UNSUPPORTED_MEDIA_TYPE);
  }
  if (body.tooLarge || !body.bytes) throw new PayloadTooLargeException(BODY_TOO_LARGE(limit));
  let value: unknown;
  try {
    value = JSON.parse(body.bytes.toString('utf8'));
  } catch {
    throw new BadRequestException(BODY_MALFORMED);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new BadRequestException(BODY_NOT_OBJECT);
  return value as BotInputs;
}
