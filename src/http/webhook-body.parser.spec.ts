import { PassThrough } from 'node:stream';
import { httpStatusOf } from '../errors/error-status.js';
import { ClientGoneError, WebhookTriggerError } from '../errors/webhook-trigger.errors.js';
import {
  BODY_MALFORMED,
  BODY_NOT_JSON_TYPE,
  BODY_NOT_OBJECT,
  BODY_TIMEOUT,
  BODY_TOO_DEEP,
  BODY_TOO_LARGE,
} from '../errors/webhook-trigger.messages.js';
import { readBody } from './body-capture/read-body.js';
import { checkJsonContentType, nestsDeeperThan, parseTriggerBody } from './webhook-body.parser.js';

const LIMIT = 1024;
const DEPTH = 64;
const json = (text: string) => Buffer.from(text, 'utf8');

/** The HTTP status and message an error of the module turns into (through the one status table). */
function failure(fn: () => unknown): [number, string] {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof WebhookTriggerError)) throw new Error(`expected one of the module's errors, got ${String(e)}`);
    return [httpStatusOf(e)!, e.message];
  }
  throw new Error('expected the body to be refused');
}

async function failureOf(promise: Promise<unknown>): Promise<[number | undefined, string, unknown]> {
  try {
    await promise;
  } catch (e) {
    return [httpStatusOf(e), (e as Error).message, e];
  }
  throw new Error('expected the body to be refused');
}

describe('parseTriggerBody', () => {
  it('returns a JSON object as the bot inputs, values intact', () => {
    const inputs = { text: 'héllo ☃', n: 1.5, list: [1, 'a', null], nested: { deep: { ok: true } } };
    expect(parseTriggerBody(json(JSON.stringify(inputs)), DEPTH)).toEqual(inputs);
    expect(parseTriggerBody(json('{}'), DEPTH)).toEqual({});
  });

  it.each([
    'application/json',
    'application/json; charset=utf-8',
    'APPLICATION/JSON',
    'application/json;charset=UTF-8',
    'application/vnd.api+json',
    'application/merge-patch+json',
  ])('accepts Content-Type %s', (type) => {
    expect(() => checkJsonContentType(type)).not.toThrow();
  });

  it.each([
    undefined,
    '',
    'text/plain',
    'text/json',
    'application/x-www-form-urlencoded',
    'multipart/form-data',
    'application/jsonp',
    'application/json-seq',
    'application/xml',
  ])('answers 415 for Content-Type %p', (type) => {
    expect(failure(() => checkJsonContentType(type))).toEqual([415, BODY_NOT_JSON_TYPE(type)]);
  });

  it.each(['', '{', '{"a":1', "{'a':1}", '{a:1}', '{"a":1}{"b":2}', 'undefined', '\uFEFF{}'])(
    'answers 400 for malformed JSON %p',
    (text) => {
      expect(failure(() => parseTriggerBody(json(text), DEPTH))).toEqual([400, BODY_MALFORMED]);
    },
  );

  it.each(['[]', '[{"a":1}]', '1', '"s"', 'null', 'true', 'false'])('answers 400 for JSON that is not an object: %s', (text) => {
    expect(failure(() => parseTriggerBody(json(text), DEPTH))).toEqual([400, BODY_NOT_OBJECT]);
  });

  it('answers 400 for nesting deeper than maxJsonDepth, before parsing, and accepts exactly maxJsonDepth', () => {
    const nested = (levels: number) => `{"a":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;
    expect(parseTriggerBody(json(nested(DEPTH)), DEPTH)).toEqual({ a: expect.any(Array) });
    expect(failure(() => parseTriggerBody(json(nested(DEPTH + 1)), DEPTH))).toEqual([400, BODY_TOO_DEEP(DEPTH)]);
    // What gave a stack overflow (500) when the run was stored: 5,000 levels.
    expect(failure(() => parseTriggerBody(json(nested(5000)), DEPTH))).toEqual([400, BODY_TOO_DEEP(DEPTH)]);
  });

  it('counts depth outside strings only (brackets and escaped quotes inside strings do not count)', () => {
    expect(nestsDeeperThan(json(`{"s":"${'['.repeat(500)}\\"{{{"}`), 2)).toBe(false);
    expect(nestsDeeperThan(json('{"a":{"b":{}}}'), 2)).toBe(true);
    expect(nestsDeeperThan(json('{"a":{"b":1}}'), 2)).toBe(false);
  });

  it('does not let "__proto__" in the body reach any prototype', () => {
    const inputs = parseTriggerBody(json('{"__proto__":{"polluted":true},"a":1}'), DEPTH);
    expect(Object.getPrototypeOf(inputs)).toBe(Object.prototype);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    expect((inputs as { polluted?: boolean }).polluted).toBeUndefined();
    expect(inputs.a).toBe(1);
  });
});

describe('readBody', () => {
  const stream = () => new PassThrough();

  it('reads the whole body', async () => {
    const s = stream();
    const read = readBody({ stream: s, contentType: 'application/json', contentLength: undefined }, LIMIT, 1000);
    s.write('{"a":');
    s.end('1}');
    expect((await read).toString()).toBe('{"a":1}');
  });

  it('answers 413 for a declared Content-Length over the limit without reading a byte', async () => {
    const s = stream();
    s.write('x'); // would be read if anything were
    const [status, message] = await failureOf(
      readBody({ stream: s, contentType: 'application/json', contentLength: String(10 * 1024 ** 3) }, LIMIT, 1000),
    );
    expect([status, message]).toEqual([413, BODY_TOO_LARGE(LIMIT)]);
    expect(s.readableLength).toBe(1);
    expect(BODY_TOO_LARGE(LIMIT)).toContain('1024');
  });

  it('answers 413 as soon as an undeclared body grows past the limit, and stops reading', async () => {
    const s = stream();
    const read = readBody({ stream: s, contentType: 'application/json', contentLength: undefined }, LIMIT, 1000);
    s.write(Buffer.alloc(LIMIT + 1));
    const [status] = await failureOf(read);
    expect(status).toBe(413);
    s.write(Buffer.alloc(10));
    expect(s.isPaused()).toBe(true);
  });

  it('answers 408 when the body does not arrive within the timeout', async () => {
    const s = stream();
    s.write('{"a":'); // and never the rest
    const started = Date.now();
    const [status, message] = await failureOf(readBody({ stream: s, contentType: 'application/json', contentLength: '100' }, LIMIT, 100));
    expect([status, message]).toEqual([408, BODY_TIMEOUT(100)]);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('rejects with ClientGoneError (no HTTP status: nobody to answer) when the client goes away mid-body', async () => {
    const s = stream();
    const read = readBody({ stream: s, contentType: 'application/json', contentLength: '100' }, LIMIT, 1000);
    s.write('{"a":');
    s.destroy();
    const [status, , error] = await failureOf(read);
    expect(error).toBeInstanceOf(ClientGoneError);
    expect(status).toBeUndefined();
  });

  it('reads an empty body as zero bytes (then 400 as malformed JSON)', async () => {
    const s = stream();
    s.end();
    const bytes = await readBody({ stream: s, contentType: 'application/json', contentLength: '0' }, LIMIT, 1000);
    expect(bytes.length).toBe(0);
    expect(failure(() => parseTriggerBody(bytes, DEPTH))).toEqual([400, BODY_MALFORMED]);
  });
});
