import { defaultTimeline, initialReplayText, parseReplayInputs, timelineOf } from './run-model.js';

describe('timelineOf', () => {
  const times = { createdAt: '2026-11-25T10:00:00Z', startedAt: '2026-11-25T10:00:01Z', finishedAt: '2026-11-25T10:00:03Z' };

  it('uses the server timeline when it has one', () => {
    const timeline = [{ status: 'queued', at: times.createdAt }];
    expect(timelineOf({ status: 'queued', ...times, timeline })).toEqual(timeline);
  });

  it('otherwise has the steps that happened: queued, running, the final status', () => {
    expect(defaultTimeline({ status: 'failed', ...times })).toEqual([
      { status: 'queued', at: times.createdAt },
      { status: 'running', at: times.startedAt },
      { status: 'failed', at: times.finishedAt },
    ]);
    expect(timelineOf({ status: 'queued', createdAt: times.createdAt, startedAt: null, finishedAt: null, timeline: [] })).toEqual([
      { status: 'queued', at: times.createdAt },
    ]);
  });
});

describe('the replay form', () => {
  it('starts with the inputs as JSON, nothing when hidden, {} when the run had none', () => {
    expect(initialReplayText({ inputs: { city: 'Oslo' }, inputsHidden: false })).toBe('{\n  "city": "Oslo"\n}');
    expect(initialReplayText({ inputsHidden: true })).toBe('');
    expect(initialReplayText({ inputsHidden: false })).toBe('{}');
  });

  it('reads a JSON object as the inputs', () => {
    expect(parseReplayInputs(' {"a": 1} ', false)).toEqual({ inputs: { a: 1 } });
    expect(parseReplayInputs('{}', true)).toEqual({ inputs: {} });
  });

  it('says what is wrong with anything else', () => {
    expect(parseReplayInputs('', true)).toEqual({ error: 'Write the inputs to send first, or choose “Replay” to send the run’s own.' });
    expect(parseReplayInputs('{', false)).toEqual({ error: expect.stringMatching(/^The inputs are not valid JSON: /) });
    for (const text of ['[]', 'null', '3', '"x"']) {
      expect(parseReplayInputs(text, false)).toEqual({ error: 'The inputs must be a JSON object, such as {} or {"name": "value"}.' });
    }
  });
});
