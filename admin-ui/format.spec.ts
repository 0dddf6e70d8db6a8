import {
  curlCommands,
  errorMessage,
  formatClock,
  formatDuration,
  formatNumber,
  formatPer,
  formatRecentRuns,
  formatTime,
  KEY_PLACEHOLDER,
  NONE,
  shellQuote,
} from './format.js';

describe('formatDuration', () => {
  it.each([
    [830.4, '830 ms'],
    [999, '999 ms'],
    [1000, '1.00 s'],
    [2500, '2.50 s'],
    [12_040, '12.0 s'],
    [59_900, '59.9 s'],
    [185_000, '3 min 5 s'],
    [7_440_000, '2 h 4 min'],
  ])('%d ms reads %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('shows a missing duration as a dash', () => {
    expect(formatDuration(null)).toBe(NONE);
    expect(formatDuration(undefined)).toBe(NONE);
  });
});

describe('formatNumber and formatRecentRuns', () => {
  it('groups digits, and shows a missing number as a dash', () => {
    expect(formatNumber(1234567)).toBe(new Intl.NumberFormat().format(1234567));
    expect(formatNumber(null)).toBe(NONE);
  });

  it('says "or more" from the cap on, the count below it', () => {
    expect(formatRecentRuns(9_999, 10_000)).toBe(formatNumber(9_999));
    expect(formatRecentRuns(10_000, 10_000)).toBe(`${formatNumber(10_000)} or more`);
  });
});

describe('formatTime', () => {
  it('gives the ISO time and a readable text; null for none; the text as given when not a time', () => {
    const shown = formatTime('2026-11-25T10:00:00Z');
    expect(shown).toEqual({ iso: '2026-11-25T10:00:00.000Z', text: expect.stringContaining('2026') });
    expect(formatTime(null)).toBeNull();
    expect(formatTime('')).toBeNull();
    expect(formatTime('soon')).toEqual({ iso: null, text: 'soon' });
  });
});

describe('shellQuote and curlCommands', () => {
  it('single-quotes a word, a quote inside it closed and escaped', () => {
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
  });

  it('builds the trigger and wait commands with the key in the X-Key header', () => {
    const curl = curlCommands('https://x.test/webhooks/t1/trigger', 'k1');
    expect(curl.trigger).toBe(
      `curl -X POST 'https://x.test/webhooks/t1/trigger' -H 'X-Key: k1' -H 'Content-Type: application/json' -d '{}'`,
    );
    expect(curl.wait).toBe(`curl 'https://x.test/webhooks/t1/trigger/invocation/<INVOCATION_ID>/sync' -H 'X-Key: k1'`);
    expect(curlCommands('u', KEY_PLACEHOLDER).trigger).toContain(`'X-Key: <TRIGGER_KEY>'`);
  });
});

describe('errorMessage', () => {
  it('prefers the message, then the code, then the JSON', () => {
    expect(errorMessage({ message: 'boom', code: 'timeout' })).toBe('boom');
    expect(errorMessage({ message: '', code: 'timeout' })).toBe('timeout');
    expect(errorMessage('plain')).toBe('plain');
    expect(errorMessage(null)).toBe('');
  });
});

describe('formatClock and formatPer', () => {
  it('shows a bucket start as hours and minutes, and a bad time as a dash', () => {
    expect(formatClock('2026-01-02T10:17:00.000Z')).toMatch(/^\d{1,2}[:.]\d\d/);
    expect(formatClock('not a time')).toBe(NONE);
    expect(formatClock(null)).toBe(NONE);
  });

  it.each([
    [60_000, 'per minute'],
    [30 * 60_000, 'per 30 minutes'],
    [60 * 60_000, 'per hour'],
  ])('%d ms buckets read %s', (ms, text) => {
    expect(formatPer(ms)).toBe(text);
  });
});
