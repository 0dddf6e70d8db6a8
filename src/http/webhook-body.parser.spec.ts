import { httpStatusOf } from '../errors/error-status.js';
import { WebhookTriggerError } from '../errors/webhook-trigger.errors.js';
import { BODY_MALFORMED, BODY_NOT_JSON_TYPE, BODY_NOT_OBJECT, BODY_TOO_LARGE } from '../errors/webhook-trigger.messages.js';
import type { CapturedBody } from './http.types.js';
import { parseTriggerBody } from './webhook-body.parser.js';

const LIMIT = 1024;
const body = (text: string, contentType: string | undefined = 'application/json'): CapturedBody => ({
  contentType,
  bytes: Buffer.from(text, 'utf8'),
  tooLarge: false,
});

/** The HTTP status and message the parser's error turns into (through the one status table). */
function failure(captured: CapturedBody | undefined): [number, string] {
  try {
    parseTriggerBody(captured, LIMIT);
  } catch (e) {
    if (!(e instanceof WebhookTriggerError)) throw new Error(`expected one of the module's errors, got ${String(e)}`);
    return [httpStatusOf(e)!, e.message];
  }
  throw new Error('expected the body to be refused');
}

describe('parseTriggerBody', () => {
  it('returns a JSON object as the bot inputs, values intact', () => {
    const inputs = { text: 'héllo ☃', n: 1.5, list: [1, 'a', null], nested: { deep: { ok: true } } };
    expect(parseTriggerBody(body(JSON.stringify(inputs)), LIMIT)).toEqual(inputs);
    expect(parseTriggerBody(body('{}'), LIMIT)).toEqual({});
  });

  it.each(['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json;charset=UTF-8', 'application/vnd.api+json', 'application/merge-patch+json'])(
    'accepts Content-Type %s',
    (type) => {
      expect(parseTriggerBody(body('{"a":1}', type), LIMIT)).toEqual({ a: 1 });
    },
  );

  it.each([undefined, '', 'text/plain', 'text/json', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/jsonp', 'application/json-seq', 'application/xml'])(
    'answers 415 for Content-Type %p',
    (type) => {
      expect(failure({ contentType: type, bytes: Buffer.from('{"a":1}'), tooLarge: false })).toEqual([415, BODY_NOT_JSON_TYPE(type)]);
    },
  );

  it('answers 413 for a body over the limit, naming the limit', () => {
    expect(failure({ contentType: 'application/json', bytes: null, tooLarge: true })).toEqual([413, BODY_TOO_LARGE(LIMIT)]);
    expect(BODY_TOO_LARGE(LIMIT)).toContain('1024');
  });

  it('judges the type before the size: an oversized form post is 415', () => {
    expect(failure({ contentType: 'text/plain', bytes: null, tooLarge: true })[0]).toBe(415);
  });

  it.each(['', '{', '{"a":1', "{'a':1}", '{a:1}', '{"a":1}{"b":2}', 'undefined', '\uFEFF{}'])('answers 400 for malformed JSON %p', (text) => {
    expect(failure(body(text))).toEqual([400, BODY_MALFORMED]);
  });

  it.each(['[]', '[{"a":1}]', '1', '"s"', 'null', 'true', 'false'])('answers 400 for JSON that is not an object: %s', (text) => {
    expect(failure(body(text))).toEqual([400, BODY_NOT_OBJECT]);
  });

  it('answers 400 when no body was captured at all', () => {
    expect(failure(undefined)[0]).toBe(400);
  });

  it('does not let "__proto__" in the body reach any prototype', () => {
    const inputs = parseTriggerBody(body('{"__proto__":{"polluted":true},"a":1}'), LIMIT);
    expect(Object.getPrototypeOf(inputs)).toBe(Object.prototype);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    expect((inputs as { polluted?: boolean }).polluted).toBeUndefined();
    expect(inputs.a).toBe(1);
  });
});
