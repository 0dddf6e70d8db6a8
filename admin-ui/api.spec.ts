import { ApiError, botPath, errorText, isStatus, messageOf, runPath, triggerPath } from './api.js';

describe('messageOf', () => {
  it("reads Nest's message, joining a list", () => {
    expect(messageOf({ statusCode: 400, message: 'bad' })).toBe('bad');
    expect(messageOf({ message: ['a', 'b'] })).toBe('a; b');
    expect(messageOf({ message: 3 })).toBe('');
    expect(messageOf(null)).toBe('');
    expect(messageOf('text')).toBe('');
  });
});

describe('errorText', () => {
  it('says what each failure means', () => {
    // The browser's own reason (Chromium: "Failed to fetch"), not a fixed phrase.
    expect(errorText(new ApiError(0, 'Failed to fetch', 'GET'))).toBe(
      'Could not reach the server (Failed to fetch). Check the connection, then try again.',
    );
    expect(errorText(new ApiError(401, 'Sign in first', 'POST'))).toBe(
      'You are not signed in, or your admin token is wrong (the server answered 401: Sign in first).',
    );
    expect(errorText(new ApiError(403, 'no', 'GET'))).toMatch(/^You are not signed in/);
    expect(errorText(new ApiError(403, 'Read-only', 'PUT'))).toBe(
      'The server refused this change (it answered 403: Read-only). Changes may be disabled, or you are not signed in as an admin.',
    );
    expect(errorText(new ApiError(503, 'busy', 'GET'))).toBe('Server error 503: busy');
    expect(errorText(new ApiError(400, 'name must be a string', 'POST'))).toBe('name must be a string');
    expect(errorText(new Error('oops'))).toBe('Something went wrong: oops');
  });

  it('tells an answer by its status', () => {
    expect(isStatus(new ApiError(404, 'x', 'GET'), 404)).toBe(true);
    expect(isStatus(new ApiError(409, 'x', 'GET'), 404)).toBe(false);
    expect(isStatus(new Error('x'), 404)).toBe(false);
  });
});

describe('API paths', () => {
  it('encode the ids', () => {
    expect(botPath('a/b')).toBe('/bots/a%2Fb');
    expect(triggerPath('t 1')).toBe('/triggers/t%201');
    expect(runPath('r?1')).toBe('/invocations/r%3F1');
  });
});
